import Foundation
import SwiftProtobuf
import Testing

@testable import MQTTChat

/// The golden envelopes the browser chat's hand-written codec (web/envelope.js) is tested against.
///
/// The fixture web/test/golden.json holds, per envelope, the bytes swift-protobuf writes (hex) and its proto3
/// JSON view. `node --test web/test/` checks that the JS codec decodes every one to that JSON and encodes it
/// back to exactly those bytes. This test rewrites the file when MQTTCHAT_WRITE_GOLDEN=1 and otherwise fails if
/// the committed file differs from what the Swift layer writes today, so the fixture can never go stale.
@Suite("Golden envelopes for the browser chat")
struct WebGoldenEnvelopeTests {
    static let fixtureURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("web/test/golden.json")

    /// A fixed envelope (name, envelope), and for the ones with unknown fields the bytes the JS codec writes
    /// after decoding them (unknown fields are skipped, so they are not written back).
    struct Fixture {
        let name: String
        let envelope: ProtoEnvelope
        var canonical: ProtoEnvelope? = nil
    }

    static func factory(_ id: String, profile: UserProfile = UserProfile(name: "Alice", level: 7, iconURL: "https://x/a.png"))
        throws -> ChatEnvelopeFactory
    {
        ChatEnvelopeFactory(
            sender: try UserID("alice"), profile: profile, session: "5E55-10N",
            now: { Date(timeIntervalSince1970: 1_700_000_000.123) }, makeID: { id })
    }

    static func fixtures() throws -> [Fixture] {
        let lobby = try RoomName("lobby")
        var fixtures = [
            Fixture(name: "join", envelope: try factory("id-join").join(lobby)),
            Fixture(name: "leave", envelope: try factory("id-leave").leave(lobby)),
            Fixture(name: "text", envelope: try factory("id-text").text("hello 世界 😀 <script>alert(1)</script>", in: lobby)),
            Fixture(
                name: "gift",
                envelope: try factory("id-gift").gift(ChatGift(name: "rose", count: 3, url: "https://x/rose.gif"), in: lobby)),
            Fixture(name: "direct", envelope: try factory("id-direct").direct("psst", to: try UserID("bob"))),
            Fixture(name: "status_online", envelope: try factory("id-on").status(isOnline: true)),
            Fixture(name: "status_offline", envelope: try factory("id-off").status(isOnline: false)),
            Fixture(name: "heartbeat_zero", envelope: try factory("id-hb0").heartbeat(sequence: 0, in: lobby)),
            Fixture(name: "heartbeat_max", envelope: try factory("id-hbmax").heartbeat(sequence: .max, in: lobby)),
            Fixture(
                name: "heartbeat_interval",
                envelope: try factory("id-hbint").heartbeat(sequence: 7, interval: .seconds(3), in: lobby)),
            Fixture(
                name: "heartbeat_interval_max",
                envelope: try factory("id-hbintmax").heartbeat(sequence: 1, interval: .seconds(5_000_000), in: lobby)),
            Fixture(name: "empty_profile", envelope: try factory("id-empty", profile: UserProfile(name: "")).text("x", in: lobby)),
        ]
        // Edges no factory makes: negative int32 and int64 (10-byte varints), the largest int64, unknown enums.
        var negative = try factory("id-neg", profile: UserProfile(name: "n", level: -1)).gift(
            ChatGift(name: "debt", count: -2, url: ""), in: lobby)
        negative.sentAtMs = -1
        fixtures.append(Fixture(name: "negative_numbers", envelope: negative))
        var far = try factory("id-far").text("far future", in: lobby)
        far.sentAtMs = .max
        far.type = .UNRECOGNIZED(42)
        fixtures.append(Fixture(name: "max_int64_unknown_type", envelope: far))
        var oddStatus = try factory("id-odd").status(isOnline: true)
        oddStatus.status.state = .UNRECOGNIZED(7)
        fixtures.append(Fixture(name: "unknown_status_state", envelope: oddStatus))
        fixtures.append(try unknownFieldsFixture())
        // A heartbeat of a client from before presence by heartbeat: a sequence and nothing else.
        var bare = ProtoHeartbeat()
        bare.sequence = 3
        var oldHeartbeat = try factory("id-hbold").heartbeat(sequence: 3, in: lobby)
        oldHeartbeat.heartbeat = bare
        fixtures.append(Fixture(name: "heartbeat_before_presence", envelope: oldHeartbeat))
        return fixtures
    }

    /// A text envelope carrying unknown fields of every wire type, at the top level and inside the body, as a
    /// newer client might send them.
    static func unknownFieldsFixture() throws -> Fixture {
        let base = try factory("id-unknown").text("from the future", in: RoomName("lobby"))
        // field 99 varint 150, field 100 bytes "zz", field 101 fixed32, field 102 fixed64, field 103 group {1: 1}.
        let unknown: [UInt8] =
            [0x98, 0x06, 0x96, 0x01, 0xA2, 0x06, 0x02, 0x7A, 0x7A, 0xAD, 0x06, 1, 2, 3, 4]
            + [0xB1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8, 0xBB, 0x06, 0x08, 0x01, 0xBC, 0x06]
        var body = try ProtoChatMessage(serializedBytes: try base.text.serializedBytes() + unknown)
        var envelope = try ProtoEnvelope(serializedBytes: try base.serializedBytes() + unknown)
        body.text = base.text.text
        envelope.text = body
        return Fixture(name: "unknown_fields", envelope: envelope, canonical: base)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The fixture file's text: one envelope per line, so a change shows as a readable diff.
    static func fixtureText() throws -> String {
        var lines: [String] = []
        for fixture in try fixtures() {
            let bytes: [UInt8] = try fixture.envelope.serializedBytes()
            var line = "    {\"name\": \"\(fixture.name)\", \"hex\": \"\(hex(bytes))\""
            if let canonical = fixture.canonical {
                line += ", \"canonicalHex\": \"\(hex(try canonical.serializedBytes()))\""
            }
            line += ", \"json\": \(try fixture.envelope.jsonString())}"
            lines.append(line)
        }
        return """
            {
              "comment": "Written by Tests/MQTTChatTests/WebGoldenEnvelopeTests.swift (MQTTCHAT_WRITE_GOLDEN=1 swift test --filter WebGoldenEnvelopeTests); never edit by hand. hex: what swift-protobuf writes; canonicalHex: the same envelope without its unknown fields; json: its proto3 JSON.",
              "envelopes": [
            \(lines.joined(separator: ",\n"))
              ]
            }

            """
    }

    @Test("every golden envelope decodes back to itself")
    func roundTrip() throws {
        for fixture in try Self.fixtures() {
            let decoded = try ProtoEnvelope(serializedBytes: try fixture.envelope.serializedBytes() as [UInt8])
            #expect(decoded == fixture.envelope, "\(fixture.name)")
        }
    }

    @Test("web/test/golden.json is what the Swift layer writes today")
    func fixtureIsCurrent() throws {
        let expected = try Self.fixtureText()
        if ProcessInfo.processInfo.environment["MQTTCHAT_WRITE_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(
                at: Self.fixtureURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            try expected.write(to: Self.fixtureURL, atomically: true, encoding: .utf8)
        }
        let committed = try? String(contentsOf: Self.fixtureURL, encoding: .utf8)
        #expect(
            committed == expected,
            "\(Self.fixtureURL.path) is stale or missing: rerun with MQTTCHAT_WRITE_GOLDEN=1 and commit it")
    }
}
