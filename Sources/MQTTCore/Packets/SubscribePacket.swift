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

    /// One requested topic filter with its maximum QoS.
    public struct Subscription: Sendable, Hashable {
        /// The topic filter (validated by the decoder).
        public var topicFilter: String
        /// The maximum QoS the client wants to receive on this filter.
        public var qos: QoS

        /// Creates a subscription request.
        public init(topicFilter: String, qos: QoS) {
            self.topicFilter = topicFilter
            self.qos = qos
        }
    }
}
