/// Checks that a room name or user id can be used as exactly one level of an MQTT topic.
///
/// A name becomes a topic level (`mqttchat/rooms/<room>/messages`), so it must not contain
/// the level separator or wildcards (a room called `#` would subscribe to everything), must not
/// contain U+0000 (forbidden by MQTT 3.1.1 section 1.5.3), and must be short enough to keep
/// topics well below MQTT's 65535-byte limit.
public struct ChatNameValidator: Sendable, Hashable {
    /// The default limit on a name's length in UTF-8 bytes.
    public static let defaultMaxByteCount = 64

    /// The longest accepted name, in UTF-8 bytes.
    public var maxByteCount: Int

    /// Creates a validator that accepts names of 1...`maxByteCount` UTF-8 bytes.
    public init(maxByteCount: Int = ChatNameValidator.defaultMaxByteCount) {
        self.maxByteCount = maxByteCount
    }

    /// Throws the first rule `name` breaks; returns normally if it is a valid name.
    public func validate(_ name: String) throws(ChatNameError) {
        let bytes = name.utf8
        if bytes.isEmpty { throw .empty }
        if bytes.count > maxByteCount { throw .tooLong(byteCount: bytes.count, limit: maxByteCount) }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "+"): throw .containsSingleLevelWildcard
            case UInt8(ascii: "#"): throw .containsMultiLevelWildcard
            case UInt8(ascii: "/"): throw .containsLevelSeparator
            case 0: throw .containsNullCharacter
            default: continue
            }
        }
    }
}
