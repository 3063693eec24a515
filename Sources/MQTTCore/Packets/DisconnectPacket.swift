/// DISCONNECT: the client is closing cleanly; the will is discarded (MQTT 3.1.1 section 3.14).
public struct DisconnectPacket: Sendable, Hashable {
    /// MQTT 5 reason code; always 0 (normal disconnection) for 3.1.1.
    public var reasonCode: UInt8
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a DISCONNECT packet.
    public init(reasonCode: UInt8 = 0, properties: MQTTProperties = .none) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
