import Testing

@testable import MQTTChat

@Suite("Room and user name validation")
struct NameValidationTests {
    @Test(
        "invalid names are rejected with the matching error",
        arguments: [
            ("", ChatNameError.empty),
            ("a+b", .containsSingleLevelWildcard),
            ("+", .containsSingleLevelWildcard),
            ("lobby#", .containsMultiLevelWildcard),
            ("a/b", .containsLevelSeparator),
            ("/", .containsLevelSeparator),
            ("nul\u{0}", .containsNullCharacter),
            (String(repeating: "x", count: 65), .tooLong(byteCount: 65, limit: 64)),
            (String(repeating: "é", count: 33), .tooLong(byteCount: 66, limit: 64)),
        ])
    func rejects(name: String, expected: ChatNameError) {
        #expect(throws: expected) { try ChatNameValidator().validate(name) }
        #expect(throws: expected) { try RoomName(name) }
        #expect(throws: expected) { try UserID(name) }
    }

    @Test(
        "valid names are accepted",
        arguments: ["lobby", "a", "Zimmer 12", "直播间", "emoji-🎁", "$sys-like", String(repeating: "x", count: 64)])
    func accepts(name: String) throws {
        try ChatNameValidator().validate(name)
        #expect(try RoomName(name).rawValue == name)
    }

    @Test("the length limit counts UTF-8 bytes and is configurable")
    func configurableLimit() throws {
        let validator = ChatNameValidator(maxByteCount: 4)
        try validator.validate("abcd")
        #expect(throws: ChatNameError.tooLong(byteCount: 6, limit: 4)) { try validator.validate("直播") }
    }
}
