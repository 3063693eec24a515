/// The control packet type carried in the high nibble of the fixed header's first byte.
public enum PacketType: UInt8, Sendable, Hashable, CaseIterable {
    case connect = 1
    case connack = 2
    case publish = 3
    case puback = 4
    case pubrec = 5
    case pubrel = 6
    case pubcomp = 7
    case subscribe = 8
    case suback = 9
    case unsubscribe = 10
    case unsuback = 11
    case pingreq = 12
    case pingresp = 13
    case disconnect = 14
    /// MQTT 5 only.
    case auth = 15
}
