/// SUBSCRIBE: a client asks for one or more topic filters (MQTT 3.1.1 section 3.8).
public struct SubscribePacket: Sendable, Hashable {
    /// Packet identifier, echoed by SUBACK; never 0.
    public var packetID: UInt16
    /// The requested filters, in order; never empty.
    public var subscriptions: [Subscription]
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a SUBSCRIBE packet.
    public init(packetID: UInt16, subscriptions: [Subscription], properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.subscriptions = subscriptions
        self.properties = properties
    }

    /// One requested topic filter with its subscription options (MQTT 5.0 3.8.3.1; 3.1.1 has only the QoS).
    public struct Subscription: Sendable, Hashable {
        /// The topic filter (validated by the decoder).
        public var topicFilter: String
        /// The maximum QoS the client wants to receive on this filter.
        public var qos: QoS
        /// MQTT 5 No Local: do not send the client its own publications on this filter. False for 3.1.1.
        public var noLocal: Bool
        /// MQTT 5 Retain As Published: keep the RETAIN flag of forwarded messages. False for 3.1.1.
        public var retainAsPublished: Bool
        /// MQTT 5 Retain Handling: when to send retained messages. ``RetainHandling/sendOnSubscribe`` for 3.1.1.
        public var retainHandling: RetainHandling

        /// Creates a subscription request.
        public init(
            topicFilter: String, qos: QoS, noLocal: Bool = false, retainAsPublished: Bool = false,
            retainHandling: RetainHandling = .sendOnSubscribe
        ) {
            self.topicFilter = topicFilter
            self.qos = qos
            self.noLocal = noLocal
            self.retainAsPublished = retainAsPublished
            self.retainHandling = retainHandling
        }
    }

    /// When the server sends retained messages for a new subscription (MQTT 5.0 3.8.3.1, bits 4 and 5).
    public enum RetainHandling: UInt8, Sendable, Hashable, CaseIterable {
        /// 0: send retained messages at the time of the subscribe (the only behaviour of 3.1.1).
        case sendOnSubscribe = 0
        /// 1: send them only if the subscription did not exist before.
        case sendOnNewSubscription = 1
        /// 2: do not send them.
        case doNotSend = 2
    }
}
