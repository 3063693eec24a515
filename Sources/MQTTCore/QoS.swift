/// MQTT quality of service levels (MQTT 3.1.1 section 4.3).
public enum QoS: UInt8, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// At most once: fire and forget, no acknowledgement.
    case atMostOnce = 0
    /// At least once: acknowledged with PUBACK; may be delivered more than once.
    case atLeastOnce = 1
    /// Exactly once: the PUBREC / PUBREL / PUBCOMP four-part handshake.
    case exactlyOnce = 2

    public static func < (lhs: QoS, rhs: QoS) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "QoS \(rawValue)" }
}
