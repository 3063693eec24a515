public import MQTTCore

/// What the broker said in the CONNACK of the current (or last) connection: at MQTT 5 its properties, which tell
/// the client what the server allows. `nil` fields mean the broker did not send the property (the MQTT 5 default
/// then applies; at 3.1.1 every property is `nil`).
public struct MQTTConnAckInfo: Sendable, Hashable {
    /// Whether the broker resumed a previous session.
    public var sessionPresent: Bool
    /// The client identifier the broker assigned because the client sent an empty one.
    public var assignedClientIdentifier: String?
    /// The keep alive the broker wants instead of the client's, in seconds (libmosquitto adopts it).
    public var serverKeepAlive: UInt16?
    /// How many QoS 1/2 messages the broker accepts unacknowledged at once (default 65535).
    public var receiveMaximum: UInt16?
    /// The largest packet the broker accepts, in bytes (default: no limit).
    public var maximumPacketSize: UInt32?
    /// The highest topic alias the broker accepts (default 0: none).
    public var topicAliasMaximum: UInt16?
    /// The highest QoS the broker supports (default 2).
    public var maximumQoS: QoS?
    /// Whether the broker supports retained messages (default true).
    public var retainAvailable: Bool?
    /// Whether wildcard subscriptions are supported (default true).
    public var wildcardSubscriptionAvailable: Bool?
    /// Whether subscription identifiers are supported (default true).
    public var subscriptionIdentifiersAvailable: Bool?
    /// Whether shared subscriptions are supported (default true).
    public var sharedSubscriptionAvailable: Bool?
    /// The session expiry interval the broker uses instead of the one asked for, in seconds.
    public var sessionExpiryInterval: UInt32?
    /// Response Information: the basis the broker suggests for response topics.
    public var responseInformation: String?
    /// Server Reference: another server the client may use.
    public var serverReference: String?
    /// Reason String: a human-readable diagnostic.
    public var reasonString: String?
    /// User properties, in order.
    public var userProperties: [MQTTUserProperty]

    /// Creates CONNACK information; only `sessionPresent` is required.
    public init(
        sessionPresent: Bool, assignedClientIdentifier: String? = nil, serverKeepAlive: UInt16? = nil,
        receiveMaximum: UInt16? = nil, maximumPacketSize: UInt32? = nil, topicAliasMaximum: UInt16? = nil,
        maximumQoS: QoS? = nil, retainAvailable: Bool? = nil, wildcardSubscriptionAvailable: Bool? = nil,
        subscriptionIdentifiersAvailable: Bool? = nil, sharedSubscriptionAvailable: Bool? = nil,
        sessionExpiryInterval: UInt32? = nil, responseInformation: String? = nil, serverReference: String? = nil,
        reasonString: String? = nil, userProperties: [MQTTUserProperty] = []
    ) {
        self.sessionPresent = sessionPresent
        self.assignedClientIdentifier = assignedClientIdentifier
        self.serverKeepAlive = serverKeepAlive
        self.receiveMaximum = receiveMaximum
        self.maximumPacketSize = maximumPacketSize
        self.topicAliasMaximum = topicAliasMaximum
        self.maximumQoS = maximumQoS
        self.retainAvailable = retainAvailable
        self.wildcardSubscriptionAvailable = wildcardSubscriptionAvailable
        self.subscriptionIdentifiersAvailable = subscriptionIdentifiersAvailable
        self.sharedSubscriptionAvailable = sharedSubscriptionAvailable
        self.sessionExpiryInterval = sessionExpiryInterval
        self.responseInformation = responseInformation
        self.serverReference = serverReference
        self.reasonString = reasonString
        self.userProperties = userProperties
    }
}
