import MQTTCore
import Testing

/// Topics are compared as bytes, never as Unicode-equivalent text (MQTT-4.7.3-4).
@Suite("Byte-exact topic strings")
struct UTF8KeyTests {
    /// "café" precomposed (U+00E9) and decomposed ("e" + U+0301): equal as Swift `String`s.
    static let composed = "caf\u{00E9}"
    static let decomposed = "cafe\u{0301}"

    @Test("Unicode-equivalent spellings are different keys; equal bytes are equal keys with equal hashes")
    func equivalenceIsNotEquality() {
        #expect(Self.composed == Self.decomposed, "Swift's own String equality, the reason UTF8Key exists")
        #expect(UTF8Key(Self.composed) != UTF8Key(Self.decomposed))
        let dictionary: [UTF8Key<String>: Int] = [UTF8Key(Self.composed): 1, UTF8Key(Self.decomposed): 2]
        #expect(dictionary.count == 2)
        #expect(dictionary[UTF8Key(Self.composed)] == 1)
        #expect(dictionary[UTF8Key(Self.decomposed)] == 2)
        let rebuilt = String(decoding: Array(Self.composed.utf8), as: UTF8.self)
        #expect(UTF8Key(rebuilt) == UTF8Key(Self.composed))
        #expect(UTF8Key(rebuilt).hashValue == UTF8Key(Self.composed).hashValue)
        let slice = "x/\(Self.decomposed)/y".split(separator: "/")[1]
        #expect(UTF8Key(slice) == UTF8Key(Self.decomposed[...]))
        #expect(UTF8Key(slice) != UTF8Key(Self.composed[...]))
    }

    @Test("keys sort by their bytes")
    func ordering() {
        let keys: [UTF8Key<String>] = ["b", "a", "ab", "", UTF8Key(Self.composed), UTF8Key(Self.decomposed)]
        #expect(keys.sorted().map(\.base.utf8.count) == [0, 1, 2, 1, 6, 5])
        #expect(UTF8Key(Self.decomposed) < UTF8Key(Self.composed), "'e' (0x65) before 0xC3")
    }

    @Test("levels split at every '/' byte, also one followed by a combining mark")
    func levelsSplitBytes() {
        #expect(MQTTTopic.levels(of: "a//b/") == ["a", "", "b", ""])
        let levels = MQTTTopic.levels(of: "a/\u{0301}b")
        #expect(levels.count == 2)
        #expect(levels.last.map { Array($0.utf8) } == [0xCC, 0x81, 0x62])
        #expect("a/\u{0301}b".split(separator: "/").count == 1, "what Character-based splitting does instead")
    }

    @Test("$SYS is a byte prefix")
    func systemTopics() {
        #expect(MQTTTopic.isSystemTopic("$SYS/broker/uptime"))
        #expect(MQTTTopic.isSystemTopic("$SYS\u{0301}/x"))
        #expect(!"$SYS\u{0301}/x".hasPrefix("$SYS"), "what grapheme-based hasPrefix says instead")
        #expect(!MQTTTopic.isSystemTopic("$SY/x"))
        #expect(!MQTTTopic.isSystemTopic("a/$SYS"))
    }
}
