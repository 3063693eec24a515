/// AUTH: one step of MQTT 5 enhanced authentication, in either direction (MQTT 5.0 section 3.15).
///
/// ``MQTTPacket`` has no case for it yet (adding one would break the exhaustive switches of the modules that use
/// it); ``MQTTPacketDecoder/decodePacketOrAuth(from:)`` decodes it and
/// ``MQTTPacketEncoder/encode(_:into:)-(AuthPacket,_)`` encodes it.
public struct AuthPacket: Sendable, Hashable {
    /// 0x00 Success, 0x18 Continue authentication or 0x19 Re-authenticate.
    public var reasonCode: MQTTReasonCode
    /// Authentication Method, Authentication Data, Reason String, User Properties.
    public var properties: MQTTProperties

    /// Creates an AUTH packet.
    public init(reasonCode: MQTTReasonCode = .success, properties: MQTTProperties = .none) {
        self.reasonCode = reasonCode
        self.properties = properties
    }
}
