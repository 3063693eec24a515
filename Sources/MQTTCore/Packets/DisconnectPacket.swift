/// DISCONNECT: the client is closing cleanly; the will is discarded (MQTT 3.1.1 section 3.14). In MQTT 5 either
/// side sends it, with a reason code (0x04 asks the server to publish the will) and properties (MQTT 5.0 3.14).
public struct DisconnectPacket: Sendable, Hashable {
    /// MQTT 5 reason code; always ``MQTTReasonCode/normalDisconnection`` for 3.1.1.
    public var reasonCode: MQTTReasonCode
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a DISCONNECT packet.
    public init(reasonCode: MQTTReasonCode = .normalDisconnection, properties: MQTTProperties = .none) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
