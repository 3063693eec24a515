import MQTTCore
import Testing

@Suite("Topic names, filters and matching (MQTT 3.1.1 section 4.7)")
struct TopicTests {
    static let validNames = ["a", "/", "//", "a/b", "/finance", "sport/tennis/player1", "$SYS/broker", "ü/日本/😀", " ",
                             String(repeating: "n", count: 65_535)]

    @Test("valid topic names", arguments: validNames)
    func validName(_ name: String) {
        #expect(codecError { try MQTTTopic.validateName(name) } == nil)
    }

    static let invalidNames: [(String, MQTTCodecError)] = [
        ("", .emptyTopicName), ("+", .wildcardInTopicName), ("#", .wildcardInTopicName),
        ("sport/+/player", .wildcardInTopicName), ("sport/#", .wildcardInTopicName), ("a+b", .wildcardInTopicName),
        ("a\u{0}b", .nullCharacterInString), (String(repeating: "n", count: 65_536), .stringTooLong(byteCount: 65_536)),
    ]

    @Test("invalid topic names", arguments: invalidNames.indices)
    func invalidName(_ index: Int) {
        let (name, error) = Self.invalidNames[index]
        #expect(codecError { try MQTTTopic.validateName(name) } == error)
    }

    static let validFilters = ["#", "+", "+/+", "/+", "+/", "sport/#", "sport/+/player1", "+/tennis/#", "/", "a//b",
                               "$SYS/#", "sport/tennis/player1", "ü/+/日本"]

    @Test("valid topic filters", arguments: validFilters)
    func validFilter(_ filter: String) {
        #expect(codecError { try MQTTTopic.validateFilter(filter) } == nil)
    }

    static let invalidFilters: [(String, MQTTCodecError)] = [
        ("", .emptyTopicFilter), ("sport+", .wildcardNotWholeLevel), ("sport/tennis#", .wildcardNotWholeLevel),
        ("+a", .wildcardNotWholeLevel), ("a/b+/c", .wildcardNotWholeLevel), ("##", .wildcardNotWholeLevel),
        ("++", .wildcardNotWholeLevel), ("#+", .wildcardNotWholeLevel), ("a/#/b", .multiLevelWildcardNotLast),
        ("#/", .multiLevelWildcardNotLast), ("#/a", .multiLevelWildcardNotLast), ("a\u{0}", .nullCharacterInString),
        (String(repeating: "f", count: 65_536), .stringTooLong(byteCount: 65_536)),
    ]

    @Test("invalid topic filters", arguments: invalidFilters.indices)
    func invalidFilter(_ index: Int) {
        let (filter, error) = Self.invalidFilters[index]
        #expect(codecError { try MQTTTopic.validateFilter(filter) } == error)
    }

    static let matchTable: [(filter: String, topic: String, matches: Bool)] = [
        // 4.7.1.2 multi-level wildcard
        ("sport/tennis/player1/#", "sport/tennis/player1", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/ranking", true),
        ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", true),
        ("sport/#", "sport", true),
        ("sport/#", "sport/", true),
        ("sport/#", "sports", false),
        ("sport/#", "sportt/x", false),
        ("#", "sport", true),
        ("#", "/", true),
        ("#", "a/b/c", true),
        // 4.7.1.3 single-level wildcard
        ("sport/tennis/+", "sport/tennis/player1", true),
        ("sport/tennis/+", "sport/tennis/player2", true),
        ("sport/tennis/+", "sport/tennis/player1/ranking", false),
        ("sport/+", "sport", false),
        ("sport/+", "sport/", true),
        ("+", "sport", true),
        ("+", "/finance", false),
        ("+/+", "/finance", true),
        ("/+", "/finance", true),
        ("+/+", "a", false),
        ("+/#", "a", true),
        ("a/+/c", "a//c", true),
        ("a/+/+", "a//", true),
        ("+", "", false),
        ("+/tennis/#", "sport/tennis/player1", true),
        ("+/tennis/#", "sport/squash", false),
        // Exact matches, case and separators matter
        ("a/b", "a/b", true),
        ("a/b", "a/B", false),
        ("a/b", "a/b/", false),
        ("a/b/", "a/b", false),
        ("/", "/", true),
        ("a", "ab", false),
        ("ab", "a", false),
        ("ü/日本", "ü/日本", true),
        // 4.7.2 topics starting with '$'
        ("#", "$SYS/broker/uptime", false),
        ("+/broker/uptime", "$SYS/broker/uptime", false),
        ("+", "$SYS", false),
        ("$SYS/#", "$SYS/broker/uptime", true),
        ("$SYS/#", "$SYS", true),
        ("$SYS/+/uptime", "$SYS/broker/uptime", true),
        ("$SYS/broker/uptime", "$SYS/broker/uptime", true),
        ("+/$x", "a/$x", true),
        ("a/#", "a/$x", true),
        // Empty arguments match nothing
        ("", "", false),
        ("", "a", false),
    ]

    @Test("filter matching", arguments: matchTable.indices)
    func matching(_ index: Int) {
        let entry = Self.matchTable[index]
        #expect(
            MQTTTopic.matches(filter: entry.filter, topic: entry.topic) == entry.matches,
            "\(entry.filter) vs \(entry.topic)")
    }
}
