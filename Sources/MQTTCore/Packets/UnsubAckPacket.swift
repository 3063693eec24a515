/// UNSUBACK: the server's answer to UNSUBSCRIBE (MQTT 3.1.1 section 3.11).
public struct UnsubAckPacket: Sendable, Hashable {
    /// The identifier of the UNSUBSCRIBE this answers.
    public var packetID: UInt16
    /// MQTT 5 reason codes, one per topic filter of the UNSUBSCRIBE in the same order; empty for 3.1.1, whose
    /// UNSUBACK carries none.
    public var reasonCodes: [MQTTReasonCode]
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates an UNSUBACK packet.
    public init(packetID: UInt16, reasonCodes: [MQTTReasonCode] = [], properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}
