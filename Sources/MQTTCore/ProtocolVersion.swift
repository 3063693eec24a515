/// The MQTT protocol revisions a peer can announce in CONNECT.
public enum MQTTProtocolVersion: UInt8, Sendable, Hashable {
    /// MQTT 3.1, protocol name "MQIsdp", level 3.
    case v3_1 = 3
    /// MQTT 3.1.1, protocol name "MQTT", level 4.
    case v3_1_1 = 4
    /// MQTT 5.0, protocol name "MQTT", level 5 (the codec decodes it when asked to; the broker does not serve it yet).
    case v5 = 5

    /// The protocol name that must accompany this level in CONNECT.
    public var protocolName: String {
        switch self {
        case .v3_1: return "MQIsdp"
        case .v3_1_1, .v5: return "MQTT"
        }
    }
}
