public import MQTTCore

/// An application message received from (or published to) the broker.
public struct MQTTMessage: Sendable, Hashable {
    /// The topic the message was published to.
    public var topic: String
    /// The message payload.
    public var payload: [UInt8]
    /// The quality of service the message was delivered with.
    public var qos: QoS
    /// Whether the broker delivered this as a retained message.
    public var retain: Bool

    /// Creates a message.
    public init(topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}
