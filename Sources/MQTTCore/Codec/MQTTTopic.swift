/// Topic name and topic filter rules, and filter matching (MQTT 3.1.1 section 4.7).
public enum MQTTTopic {
    private static let levelSeparator = UInt8(ascii: "/")
    private static let singleLevelWildcard = UInt8(ascii: "+")
    private static let multiLevelWildcard = UInt8(ascii: "#")
    private static let dollar = UInt8(ascii: "$")

    /// Whether `topic` (a name, a filter or one level) starts with the byte `$`: wildcards at the first level do not
    /// match such topics (MQTT-4.7.2-1). A byte test: `hasPrefix("$")` compares grapheme clusters and is false for
    /// a `$` followed by a combining mark.
    @inlinable
    public static func startsWithDollar(_ topic: some StringProtocol) -> Bool {
        topic.utf8.first == UInt8(ascii: "$")
    }

    /// Whether `topic` is in the broker's reserved `$SYS` tree: its bytes start with `$SYS`, as mosquitto checks
    /// (a byte test, not `hasPrefix`, which compares grapheme clusters: "$SYS" followed by a combining mark
    /// would not have the prefix "$SYS" there).
    public static func isSystemTopic(_ topic: String) -> Bool {
        // The first byte decides for almost every topic; `starts(with:)` walks both sequences through iterators,
        // and the broker asks this for every PUBLISH.
        startsWithDollar(topic) && topic.utf8.starts(with: "$SYS".utf8)
    }

    /// The levels of a topic name or filter, split at every `/` byte; empty levels are kept ("a//b" has three,
    /// "/a" two). Splits the UTF-8, not the characters: `split(separator: "/")` on a `String` compares grapheme
    /// clusters, so a `/` followed by a combining mark would not separate levels there, though it does in MQTT.
    public static func levels(of topic: String) -> [Substring] {
        topic.utf8.split(separator: levelSeparator, omittingEmptySubsequences: false).map { Substring($0) }
    }

    /// Checks the topic NAME rules (PUBLISH, will topic): non-empty, no '+' or '#', no U+0000, at most 65,535
    /// bytes of UTF-8 (a Swift `String` is always well-formed UTF-8; the decoder checks the wire bytes).
    public static func validateName(_ topic: String) throws(MQTTCodecError) {
        var topic = topic
        let failure: MQTTCodecError? = topic.withUTF8 { bytes in
            if bytes.isEmpty { return .emptyTopicName }
            if bytes.count > Int(UInt16.max) { return .stringTooLong(byteCount: bytes.count) }
            for byte in bytes {
                switch byte {
                case 0: return .nullCharacterInString
                case singleLevelWildcard, multiLevelWildcard: return .wildcardInTopicName
                default: continue
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Checks the topic FILTER rules (SUBSCRIBE, UNSUBSCRIBE): non-empty, no U+0000, at most 65,535 bytes,
    /// '+' and '#' only as whole levels, '#' only as the last level.
    public static func validateFilter(_ filter: String) throws(MQTTCodecError) {
        var filter = filter
        let failure: MQTTCodecError? = filter.withUTF8 { bytes in
            if bytes.isEmpty { return .emptyTopicFilter }
            if bytes.count > Int(UInt16.max) { return .stringTooLong(byteCount: bytes.count) }
            var levelStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                switch byte {
                case 0:
                    return .nullCharacterInString
                case levelSeparator:
                    // A '#' level followed by a separator is not the last level.
                    if index - levelStart == 1, bytes[levelStart] == multiLevelWildcard {
                        return .multiLevelWildcardNotLast
                    }
                    levelStart = index + 1
                case singleLevelWildcard, multiLevelWildcard:
                    let levelEnd = index + 1
                    let wholeLevel = index == levelStart && (levelEnd == bytes.count || bytes[levelEnd] == levelSeparator)
                    if !wholeLevel { return .wildcardNotWholeLevel }
                default:
                    continue
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Whether `filter` matches the topic name `topic` (MQTT 3.1.1 section 4.7).
    ///
    /// - "sport/#" matches "sport" (its parent level) and everything below it; "#" matches every topic.
    /// - "+" matches exactly one level, including an empty one: "+/+" matches "/finance".
    /// - A filter starting with '+' or '#' never matches a topic starting with '$' (MQTT-4.7.2-1): "#" does not
    ///   match "$SYS/uptime", "$SYS/#" does.
    ///
    /// Both arguments are expected to be valid (see ``validateFilter(_:)`` and ``validateName(_:)``); an empty one
    /// matches nothing. Runs over the UTF-8 bytes without splitting or allocating.
    public static func matches(filter: String, topic: String) -> Bool {
        var filter = filter
        var topic = topic
        return filter.withUTF8 { filterBytes in
            topic.withUTF8 { topicBytes in
                matches(filter: filterBytes, topic: topicBytes)
            }
        }
    }

    /// Byte-level matching behind ``matches(filter:topic:)``.
    private static func matches(filter: UnsafeBufferPointer<UInt8>, topic: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let filterFirst = filter.first, let topicFirst = topic.first else { return false }
        if topicFirst == dollar, filterFirst == singleLevelWildcard || filterFirst == multiLevelWildcard {
            return false
        }
        var filterLevelStart = 0
        var topicLevelStart: Int? = 0  // nil once the topic has no levels left
        while true {
            let filterLevelEnd = endOfLevel(in: filter, from: filterLevelStart)
            let filterLevelIsSingleByte = filterLevelEnd - filterLevelStart == 1
            if filterLevelIsSingleByte, filter[filterLevelStart] == multiLevelWildcard {
                return true  // '#' matches all remaining levels, including none (the parent).
            }
            guard let topicStart = topicLevelStart else { return false }
            let topicLevelEnd = endOfLevel(in: topic, from: topicStart)
            let isSingleLevelWildcard = filterLevelIsSingleByte && filter[filterLevelStart] == singleLevelWildcard
            if !isSingleLevelWildcard,
                !levelsEqual(filter, filterLevelStart..<filterLevelEnd, topic, topicStart..<topicLevelEnd)
            {
                return false
            }
            let filterDone = filterLevelEnd == filter.count
            let topicDone = topicLevelEnd == topic.count
            if filterDone { return topicDone }
            filterLevelStart = filterLevelEnd + 1
            topicLevelStart = topicDone ? nil : topicLevelEnd + 1
        }
    }

    /// The index of the separator ending the level that starts at `start`, or `bytes.count`.
    private static func endOfLevel(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        while index < bytes.count, bytes[index] != levelSeparator { index += 1 }
        return index
    }

    /// Whether two byte ranges hold the same bytes.
    private static func levelsEqual(
        _ lhs: UnsafeBufferPointer<UInt8>, _ lhsRange: Range<Int>,
        _ rhs: UnsafeBufferPointer<UInt8>, _ rhsRange: Range<Int>
    ) -> Bool {
        guard lhsRange.count == rhsRange.count else { return false }
        return sameBytes(
            UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(lhs)[lhsRange]),
            UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(rhs)[rhsRange]))
    }
}
