public import MQTTCore

/// An application message received from (or published to) the broker.
///
/// Equality and hashing compare topic, payload, QoS and retain only: ``messageID`` is delivery metadata, so the
/// same message delivered twice (with different packet ids) still compares equal.
public struct MQTTMessage: Sendable, Hashable {
    /// The topic the message was published to.
    public var topic: String
    /// The message payload.
    public var payload: [UInt8]
    /// The quality of service the message was delivered with.
    public var qos: QoS
    /// Whether the broker delivered this as a retained message.
    public var retain: Bool
    /// The packet identifier the message arrived with (0 for QoS 0 and for messages built locally); what
    /// mosquitto_sub prints for `%m`.
    public var messageID: UInt16 = 0

    /// Creates a message.
    public init(topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false, messageID: UInt16 = 0) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.messageID = messageID
    }

    public static func == (lhs: MQTTMessage, rhs: MQTTMessage) -> Bool {
        lhs.topic == rhs.topic && lhs.payload == rhs.payload && lhs.qos == rhs.qos && lhs.retain == rhs.retain
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(topic)
        hasher.combine(payload)
        hasher.combine(qos)
        hasher.combine(retain)
    }
}
