/// MQTT 5 properties attached to a packet.
///
/// MQTT 3.1.1 packets carry none, so every packet in this module holds an empty
/// `MQTTProperties` when it is decoded from or encoded for 3.1.1. The type exists so
/// that MQTT 5 support adds cases here and codec branches, not new packet shapes.
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
}

/// One MQTT 5 property. Only a few identifiers are modelled yet.
public enum MQTTProperty: Sendable, Hashable {
    /// 0x01 Payload Format Indicator.
    case payloadFormatIndicator(UInt8)
    /// 0x02 Message Expiry Interval, in seconds.
    case messageExpiryInterval(UInt32)
    /// 0x11 Session Expiry Interval, in seconds.
    case sessionExpiryInterval(UInt32)
    /// 0x1F Reason String.
    case reasonString(String)
    /// 0x26 User Property.
    case userProperty(key: String, value: String)
}
