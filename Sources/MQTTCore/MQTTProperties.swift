/// The MQTT 5 properties attached to a packet (MQTT 5.0 section 2.2.2), in wire order.
///
/// MQTT 3.1.1 packets carry none, so every packet in this module holds an empty `MQTTProperties` when it is decoded
/// from or encoded for 3.1.1. The decoder checks each list against the packet it arrived in (see
/// ``MQTTPropertyIdentifier/isAllowed(in:)``); the accessors below read the first occurrence of a property.
public struct MQTTProperties: Sendable, Hashable {
    /// The properties in wire order.
    public var entries: [MQTTProperty]

    /// Creates a property list.
    public init(_ entries: [MQTTProperty] = []) { self.entries = entries }

    /// An empty property list (what every MQTT 3.1.1 packet carries). Computed, not stored: a stored static is
    /// reached through a lazy-initialisation check on every use, and every acknowledgement takes one.
    public static var none: MQTTProperties { MQTTProperties() }

    /// Whether the list is empty.
    public var isEmpty: Bool { entries.isEmpty }

    /// The value `extract` finds in the first entry it accepts.
    private func first<Value>(_ extract: (MQTTProperty) -> Value?) -> Value? {
        for entry in entries {
            if let value = extract(entry) { return value }
        }
        return nil
    }

    /// 0x01 Payload Format Indicator.
    public var payloadFormatIndicator: UInt8? { first { if case .payloadFormatIndicator(let v) = $0 { v } else { nil } } }
    /// 0x02 Message Expiry Interval, in seconds.
    public var messageExpiryInterval: UInt32? { first { if case .messageExpiryInterval(let v) = $0 { v } else { nil } } }
    /// 0x03 Content Type.
    public var contentType: String? { first { if case .contentType(let v) = $0 { v } else { nil } } }
    /// 0x08 Response Topic.
    public var responseTopic: String? { first { if case .responseTopic(let v) = $0 { v } else { nil } } }
    /// 0x09 Correlation Data.
    public var correlationData: [UInt8]? { first { if case .correlationData(let v) = $0 { v } else { nil } } }
    /// 0x0B Subscription Identifiers, in order (a PUBLISH to a client carries one per matching subscription).
    public var subscriptionIdentifiers: [Int] {
        entries.compactMap { if case .subscriptionIdentifier(let v) = $0 { v } else { nil } }
    }
    /// 0x11 Session Expiry Interval, in seconds.
    public var sessionExpiryInterval: UInt32? { first { if case .sessionExpiryInterval(let v) = $0 { v } else { nil } } }
    /// 0x12 Assigned Client Identifier.
    public var assignedClientIdentifier: String? {
        first { if case .assignedClientIdentifier(let v) = $0 { v } else { nil } }
    }
    /// 0x13 Server Keep Alive, in seconds.
    public var serverKeepAlive: UInt16? { first { if case .serverKeepAlive(let v) = $0 { v } else { nil } } }
    /// 0x15 Authentication Method.
    public var authenticationMethod: String? { first { if case .authenticationMethod(let v) = $0 { v } else { nil } } }
    /// 0x16 Authentication Data.
    public var authenticationData: [UInt8]? { first { if case .authenticationData(let v) = $0 { v } else { nil } } }
    /// 0x17 Request Problem Information.
    public var requestProblemInformation: Bool? {
        first { if case .requestProblemInformation(let v) = $0 { v } else { nil } }
    }
    /// 0x18 Will Delay Interval, in seconds.
    public var willDelayInterval: UInt32? { first { if case .willDelayInterval(let v) = $0 { v } else { nil } } }
    /// 0x19 Request Response Information.
    public var requestResponseInformation: Bool? {
        first { if case .requestResponseInformation(let v) = $0 { v } else { nil } }
    }
    /// 0x1A Response Information.
    public var responseInformation: String? { first { if case .responseInformation(let v) = $0 { v } else { nil } } }
    /// 0x1C Server Reference.
    public var serverReference: String? { first { if case .serverReference(let v) = $0 { v } else { nil } } }
    /// 0x1F Reason String.
    public var reasonString: String? { first { if case .reasonString(let v) = $0 { v } else { nil } } }
    /// 0x21 Receive Maximum.
    public var receiveMaximum: UInt16? { first { if case .receiveMaximum(let v) = $0 { v } else { nil } } }
    /// 0x22 Topic Alias Maximum.
    public var topicAliasMaximum: UInt16? { first { if case .topicAliasMaximum(let v) = $0 { v } else { nil } } }
    /// 0x23 Topic Alias.
    public var topicAlias: UInt16? { first { if case .topicAlias(let v) = $0 { v } else { nil } } }
    /// 0x24 Maximum QoS, as a ``QoS`` (the property itself allows only 0 and 1).
    public var maximumQoS: QoS? { first { if case .maximumQoS(let v) = $0 { QoS(rawValue: v) } else { nil } } }
    /// 0x25 Retain Available.
    public var retainAvailable: Bool? { first { if case .retainAvailable(let v) = $0 { v } else { nil } } }
    /// 0x26 User Properties, in wire order, repeated names included.
    public var userProperties: [(String, String)] {
        entries.compactMap { if case .userProperty(let key, let value) = $0 { (key, value) } else { nil } }
    }
    /// 0x27 Maximum Packet Size, in bytes.
    public var maximumPacketSize: UInt32? { first { if case .maximumPacketSize(let v) = $0 { v } else { nil } } }
    /// 0x28 Wildcard Subscription Available.
    public var wildcardSubscriptionAvailable: Bool? {
        first { if case .wildcardSubscriptionAvailable(let v) = $0 { v } else { nil } }
    }
    /// 0x29 Subscription Identifier Available.
    public var subscriptionIdentifierAvailable: Bool? {
        first { if case .subscriptionIdentifierAvailable(let v) = $0 { v } else { nil } }
    }
    /// 0x2A Shared Subscription Available.
    public var sharedSubscriptionAvailable: Bool? {
        first { if case .sharedSubscriptionAvailable(let v) = $0 { v } else { nil } }
    }
}
