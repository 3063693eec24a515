/// One MQTT 5 property (MQTT 5.0 section 2.2.2.2, table 2-4): an identifier with a value of the type the spec fixes
/// for it. Flag-like byte properties whose only allowed values are 0 and 1 are modelled as `Bool`.
public enum MQTTProperty: Sendable, Hashable {
    /// 0x01 Payload Format Indicator: 0 unspecified bytes, 1 UTF-8 character data.
    case payloadFormatIndicator(UInt8)
    /// 0x02 Message Expiry Interval, in seconds.
    case messageExpiryInterval(UInt32)
    /// 0x03 Content Type (a MIME type or anything the applications agree on).
    case contentType(String)
    /// 0x08 Response Topic: the topic name for a response message.
    case responseTopic(String)
    /// 0x09 Correlation Data: lets the requester match a response to its request.
    case correlationData([UInt8])
    /// 0x0B Subscription Identifier, 1 to 268,435,455.
    case subscriptionIdentifier(Int)
    /// 0x11 Session Expiry Interval, in seconds; 0xFFFFFFFF means the session does not expire.
    case sessionExpiryInterval(UInt32)
    /// 0x12 Assigned Client Identifier (CONNACK, when the client sent an empty one).
    case assignedClientIdentifier(String)
    /// 0x13 Server Keep Alive, in seconds: the keep alive the server wants instead of the client's.
    case serverKeepAlive(UInt16)
    /// 0x15 Authentication Method (enhanced authentication).
    case authenticationMethod(String)
    /// 0x16 Authentication Data; its meaning depends on the method.
    case authenticationData([UInt8])
    /// 0x17 Request Problem Information.
    case requestProblemInformation(Bool)
    /// 0x18 Will Delay Interval, in seconds.
    case willDelayInterval(UInt32)
    /// 0x19 Request Response Information.
    case requestResponseInformation(Bool)
    /// 0x1A Response Information: the basis of a response topic.
    case responseInformation(String)
    /// 0x1C Server Reference: another server the client may use.
    case serverReference(String)
    /// 0x1F Reason String: a human-readable diagnostic.
    case reasonString(String)
    /// 0x21 Receive Maximum: how many QoS 1 and 2 publications the sender handles at once; never 0.
    case receiveMaximum(UInt16)
    /// 0x22 Topic Alias Maximum: the highest topic alias the sender accepts.
    case topicAliasMaximum(UInt16)
    /// 0x23 Topic Alias, never 0.
    case topicAlias(UInt16)
    /// 0x24 Maximum QoS the server supports: 0 or 1 (absent means 2).
    case maximumQoS(UInt8)
    /// 0x25 Retain Available.
    case retainAvailable(Bool)
    /// 0x26 User Property: a name and value pair; may repeat, and its order is kept.
    case userProperty(key: String, value: String)
    /// 0x27 Maximum Packet Size the sender accepts, in bytes (the whole packet); never 0.
    case maximumPacketSize(UInt32)
    /// 0x28 Wildcard Subscription Available.
    case wildcardSubscriptionAvailable(Bool)
    /// 0x29 Subscription Identifier Available.
    case subscriptionIdentifierAvailable(Bool)
    /// 0x2A Shared Subscription Available.
    case sharedSubscriptionAvailable(Bool)

    /// The property's identifier.
    public var identifier: MQTTPropertyIdentifier {
        switch self {
        case .payloadFormatIndicator: .payloadFormatIndicator
        case .messageExpiryInterval: .messageExpiryInterval
        case .contentType: .contentType
        case .responseTopic: .responseTopic
        case .correlationData: .correlationData
        case .subscriptionIdentifier: .subscriptionIdentifier
        case .sessionExpiryInterval: .sessionExpiryInterval
        case .assignedClientIdentifier: .assignedClientIdentifier
        case .serverKeepAlive: .serverKeepAlive
        case .authenticationMethod: .authenticationMethod
        case .authenticationData: .authenticationData
        case .requestProblemInformation: .requestProblemInformation
        case .willDelayInterval: .willDelayInterval
        case .requestResponseInformation: .requestResponseInformation
        case .responseInformation: .responseInformation
        case .serverReference: .serverReference
        case .reasonString: .reasonString
        case .receiveMaximum: .receiveMaximum
        case .topicAliasMaximum: .topicAliasMaximum
        case .topicAlias: .topicAlias
        case .maximumQoS: .maximumQoS
        case .retainAvailable: .retainAvailable
        case .userProperty: .userProperty
        case .maximumPacketSize: .maximumPacketSize
        case .wildcardSubscriptionAvailable: .wildcardSubscriptionAvailable
        case .subscriptionIdentifierAvailable: .subscriptionIdentifierAvailable
        case .sharedSubscriptionAvailable: .sharedSubscriptionAvailable
        }
    }
}

/// Where a property list appears: a packet type, or the will properties inside CONNECT, which allow a set of
/// their own.
public enum MQTTPropertyContext: UInt8, Sendable, Hashable, CaseIterable {
    /// CONNECT's own properties.
    case connect
    /// CONNACK.
    case connack
    /// PUBLISH.
    case publish
    /// PUBACK.
    case puback
    /// PUBREC.
    case pubrec
    /// PUBREL.
    case pubrel
    /// PUBCOMP.
    case pubcomp
    /// SUBSCRIBE.
    case subscribe
    /// SUBACK.
    case suback
    /// UNSUBSCRIBE.
    case unsubscribe
    /// UNSUBACK.
    case unsuback
    /// DISCONNECT.
    case disconnect
    /// AUTH.
    case auth
    /// The will properties of CONNECT.
    case will

    /// The context of a packet type's own property list; nil for PINGREQ and PINGRESP, which have none.
    public init?(_ type: PacketType) {
        switch type {
        case .connect: self = .connect
        case .connack: self = .connack
        case .publish: self = .publish
        case .puback: self = .puback
        case .pubrec: self = .pubrec
        case .pubrel: self = .pubrel
        case .pubcomp: self = .pubcomp
        case .subscribe: self = .subscribe
        case .suback: self = .suback
        case .unsubscribe: self = .unsubscribe
        case .unsuback: self = .unsuback
        case .disconnect: self = .disconnect
        case .auth: self = .auth
        case .pingreq, .pingresp: return nil
        }
    }
}

/// The property identifiers of MQTT 5.0 (table 2-4), with each one's wire type and the packets it may appear in.
public enum MQTTPropertyIdentifier: UInt8, Sendable, Hashable, CaseIterable {
    /// 0x01 Payload Format Indicator.
    case payloadFormatIndicator = 0x01
    /// 0x02 Message Expiry Interval.
    case messageExpiryInterval = 0x02
    /// 0x03 Content Type.
    case contentType = 0x03
    /// 0x08 Response Topic.
    case responseTopic = 0x08
    /// 0x09 Correlation Data.
    case correlationData = 0x09
    /// 0x0B Subscription Identifier.
    case subscriptionIdentifier = 0x0B
    /// 0x11 Session Expiry Interval.
    case sessionExpiryInterval = 0x11
    /// 0x12 Assigned Client Identifier.
    case assignedClientIdentifier = 0x12
    /// 0x13 Server Keep Alive.
    case serverKeepAlive = 0x13
    /// 0x15 Authentication Method.
    case authenticationMethod = 0x15
    /// 0x16 Authentication Data.
    case authenticationData = 0x16
    /// 0x17 Request Problem Information.
    case requestProblemInformation = 0x17
    /// 0x18 Will Delay Interval.
    case willDelayInterval = 0x18
    /// 0x19 Request Response Information.
    case requestResponseInformation = 0x19
    /// 0x1A Response Information.
    case responseInformation = 0x1A
    /// 0x1C Server Reference.
    case serverReference = 0x1C
    /// 0x1F Reason String.
    case reasonString = 0x1F
    /// 0x21 Receive Maximum.
    case receiveMaximum = 0x21
    /// 0x22 Topic Alias Maximum.
    case topicAliasMaximum = 0x22
    /// 0x23 Topic Alias.
    case topicAlias = 0x23
    /// 0x24 Maximum QoS.
    case maximumQoS = 0x24
    /// 0x25 Retain Available.
    case retainAvailable = 0x25
    /// 0x26 User Property.
    case userProperty = 0x26
    /// 0x27 Maximum Packet Size.
    case maximumPacketSize = 0x27
    /// 0x28 Wildcard Subscription Available.
    case wildcardSubscriptionAvailable = 0x28
    /// 0x29 Subscription Identifier Available.
    case subscriptionIdentifierAvailable = 0x29
    /// 0x2A Shared Subscription Available.
    case sharedSubscriptionAvailable = 0x2A

    /// The data representations of MQTT 5.0 section 1.5 that property values use.
    public enum WireType: Sendable, Hashable {
        /// One byte (MQTT 5.0 1.5.1).
        case byte
        /// Big-endian two-byte integer (MQTT 5.0 1.5.2).
        case twoByteInteger
        /// Big-endian four-byte integer (MQTT 5.0 1.5.3).
        case fourByteInteger
        /// Variable byte integer, 1 to 4 bytes (MQTT 5.0 1.5.5).
        case variableByteInteger
        /// Length-prefixed UTF-8 string (MQTT 5.0 1.5.4).
        case utf8String
        /// Length-prefixed binary data (MQTT 5.0 1.5.6).
        case binaryData
        /// Two UTF-8 strings, name then value (MQTT 5.0 1.5.7).
        case utf8StringPair
    }

    /// The type of this property's value on the wire.
    public var wireType: WireType {
        switch self {
        case .payloadFormatIndicator, .requestProblemInformation, .requestResponseInformation, .maximumQoS,
            .retainAvailable, .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable,
            .sharedSubscriptionAvailable:
            .byte
        case .serverKeepAlive, .receiveMaximum, .topicAliasMaximum, .topicAlias: .twoByteInteger
        case .messageExpiryInterval, .sessionExpiryInterval, .willDelayInterval, .maximumPacketSize: .fourByteInteger
        case .subscriptionIdentifier: .variableByteInteger
        case .contentType, .responseTopic, .assignedClientIdentifier, .authenticationMethod, .responseInformation,
            .serverReference, .reasonString:
            .utf8String
        case .correlationData, .authenticationData: .binaryData
        case .userProperty: .utf8StringPair
        }
    }

    /// Whether the property may appear in `context` (table 2-4's last column).
    public func isAllowed(in context: MQTTPropertyContext) -> Bool {
        allowedContexts & (1 << context.rawValue) != 0
    }

    /// Whether the property may appear more than once in `context`: User Property anywhere, Subscription
    /// Identifier in PUBLISH (one per matching subscription, MQTT-3.3.4-4); every other repetition is a Protocol
    /// Error.
    public func mayRepeat(in context: MQTTPropertyContext) -> Bool {
        self == .userProperty || (self == .subscriptionIdentifier && context == .publish)
    }

    /// Table 2-4's packet column as a bit set over ``MQTTPropertyContext`` raw values.
    private var allowedContexts: UInt16 {
        func set(_ contexts: MQTTPropertyContext...) -> UInt16 { contexts.reduce(0) { $0 | 1 << $1.rawValue } }
        switch self {
        case .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic, .correlationData:
            return set(.publish, .will)
        case .subscriptionIdentifier: return set(.publish, .subscribe)
        case .sessionExpiryInterval: return set(.connect, .connack, .disconnect)
        case .assignedClientIdentifier, .serverKeepAlive, .responseInformation, .maximumQoS, .retainAvailable,
            .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable, .sharedSubscriptionAvailable:
            return set(.connack)
        case .authenticationMethod, .authenticationData: return set(.connect, .connack, .auth)
        case .requestProblemInformation, .requestResponseInformation: return set(.connect)
        case .willDelayInterval: return set(.will)
        case .serverReference: return set(.connack, .disconnect)
        case .reasonString:
            return set(.connack, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .disconnect, .auth)
        case .receiveMaximum, .topicAliasMaximum, .maximumPacketSize: return set(.connect, .connack)
        case .topicAlias: return set(.publish)
        case .userProperty: return UInt16.max
        }
    }
}
