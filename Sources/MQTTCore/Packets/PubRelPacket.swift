/// PUBREL: second step of the QoS 2 handshake (publish release) (MQTT 3.1.1 section 3.6).
public struct PubRelPacket: Sendable, Hashable {
    /// The packet identifier of the message this packet belongs to.
    public var packetID: UInt16
    /// MQTT 5 reason code; always 0 (success) for 3.1.1.
    public var reasonCode: UInt8
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a PUBREL packet.
    public init(packetID: UInt16, reasonCode: UInt8 = 0, properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
