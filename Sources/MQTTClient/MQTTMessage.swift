public import MQTTCore

/// An application message received from (or published to) the broker.
///
/// Equality and hashing compare topic, payload, QoS, retain and properties only: ``messageID`` and
/// ``subscriptionIdentifiers`` are delivery metadata, so the same message delivered twice (with different packet
/// ids, or through different subscriptions) still compares equal.
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
    /// The MQTT 5 properties the message carries (always empty at MQTT 3.1.1).
    public var properties: MQTTPublishProperties
    /// MQTT 5: the identifiers of the subscriptions (``MQTTSubscribeOptions/subscriptionIdentifier``) through which
    /// the broker delivered this message; empty when none had one.
    public var subscriptionIdentifiers: [Int]

    /// Creates a message.
    public init(
        topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false, messageID: UInt16 = 0,
        properties: MQTTPublishProperties = MQTTPublishProperties(), subscriptionIdentifiers: [Int] = []
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.messageID = messageID
        self.properties = properties
        self.subscriptionIdentifiers = subscriptionIdentifiers
    }

    public static func == (lhs: MQTTMessage, rhs: MQTTMessage) -> Bool {
        lhs.topic == rhs.topic && lhs.payload == rhs.payload && lhs.qos == rhs.qos && lhs.retain == rhs.retain
            && lhs.properties == rhs.properties
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(topic)
        hasher.combine(payload)
        hasher.combine(qos)
        hasher.combine(retain)
        hasher.combine(properties)
    }
}
