/// PUBREC: first answer to a QoS 2 PUBLISH (publish received) (MQTT 3.1.1 section 3.5).
public struct PubRecPacket: Sendable, Hashable {
    /// The packet identifier of the message this packet belongs to.
    public var packetID: UInt16
    /// MQTT 5 reason code; always ``MQTTReasonCode/success`` for 3.1.1, which has no reason codes.
    public var reasonCode: MQTTReasonCode
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a PUBREC packet.
    public init(packetID: UInt16, reasonCode: MQTTReasonCode = .success, properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
