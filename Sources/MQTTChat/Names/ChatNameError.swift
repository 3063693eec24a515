/// Why a room name or user (client) id cannot be used as one level of an MQTT topic.
public enum ChatNameError: Error, Sendable, Hashable {
    /// The name is the empty string.
    case empty
    /// The name's UTF-8 encoding is longer than the limit.
    case tooLong(byteCount: Int, limit: Int)
    /// The name contains `+`, MQTT's single-level wildcard.
    case containsSingleLevelWildcard
    /// The name contains `#`, MQTT's multi-level wildcard.
    case containsMultiLevelWildcard
    /// The name contains `/`, MQTT's topic level separator.
    case containsLevelSeparator
    /// The name contains U+0000, which MQTT forbids in topic names.
    case containsNullCharacter
}
