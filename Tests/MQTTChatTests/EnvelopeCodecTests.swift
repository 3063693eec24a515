import Foundation
import SwiftProtobuf
import Testing

@testable import MQTTChat

@Suite("Envelope encoding and stream framing")
struct EnvelopeCodecTests {
    let factory: ChatEnvelopeFactory
    let room: RoomName
    let sample: [ProtoEnvelope]

    init() throws {
        factory = ChatEnvelopeFactory(
            sender: try UserID("alice"), profile: UserProfile(name: "Alice", level: 7, iconURL: "icon0"),
            session: "s1", now: { Date(timeIntervalSince1970: 1_700_000_000.123) }, makeID: { UUID().uuidString })
        room = try RoomName("lobby")
        sample = [
            factory.join(room), factory.text("hello 世界", in: room),
            factory.gift(ChatGift(name: "rocket", count: 3, url: "https://x/rocket.gif"), in: room),
            factory.heartbeat(sequence: 9, in: room), factory.leave(room),
            factory.direct("psst", to: try UserID("bob")), factory.status(isOnline: true),
        ]
    }

    @Test("the design notes' type numbers are kept on the wire")
    func typeNumbers() {
        #expect(ProtoMessageType.join.rawValue == 0)
        #expect(ProtoMessageType.leave.rawValue == 1)
        #expect(ProtoMessageType.text.rawValue == 2)
        #expect(ProtoMessageType.gift.rawValue == 3)
        #expect(ProtoMessageType.heartbeat.rawValue == 8)
    }

    @Test("an envelope survives a binary round trip with all fields")
    func roundTrip() throws {
        let gift = factory.gift(ChatGift(name: "rocket", count: 3, url: "u"), in: room)
        let bytes: [UInt8] = try gift.serializedBytes()
        let decoded = try ProtoEnvelope(serializedBytes: bytes)
        #expect(decoded == gift)
        #expect(decoded.type == .gift)
        #expect(decoded.senderID == "alice")
        #expect(decoded.room == "lobby")
        #expect(decoded.sentAtMs == 1_700_000_000_123)
        #expect(decoded.gift.giftCount == 3)
        #expect(decoded.gift.user.iconURL == "icon0")
    }

    @Test("a coalesced stream (all frames in one read) yields every envelope in order")
    func coalesced() throws {
        let envelopes = sample
        var stream: [UInt8] = []
        for envelope in envelopes { stream += try EnvelopeStreamDecoder.frame(envelope) }
        var decoder = EnvelopeStreamDecoder()
        #expect(try decoder.feed(stream) == envelopes)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("a stream split at every possible size yields every envelope once", arguments: [1, 2, 3, 7, 64])
    func split(chunkSize: Int) throws {
        let envelopes = sample
        var stream: [UInt8] = []
        for envelope in envelopes { stream += try EnvelopeStreamDecoder.frame(envelope) }
        var decoder = EnvelopeStreamDecoder()
        var decoded: [ProtoEnvelope] = []
        var start = 0
        while start < stream.count {
            let end = min(start + chunkSize, stream.count)
            decoded += try decoder.feed(stream[start..<end])
            start = end
        }
        #expect(decoded == envelopes)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test("frames are interchangeable with SwiftProtobuf's BinaryDelimited")
    func binaryDelimitedInterop() throws {
        let envelopes = sample
        let output = OutputStream.toMemory()
        output.open()
        for envelope in envelopes { try BinaryDelimited.serialize(message: envelope, to: output) }
        output.close()
        let data = try #require(output.property(forKey: .dataWrittenToMemoryStreamKey) as? Data)
        var decoder = EnvelopeStreamDecoder()
        #expect(try decoder.feed([UInt8](data)) == envelopes)

        var ours: [UInt8] = []
        for envelope in envelopes { ours += try EnvelopeStreamDecoder.frame(envelope) }
        let input = InputStream(data: Data(ours))
        input.open()
        defer { input.close() }
        for envelope in envelopes {
            #expect(try BinaryDelimited.parse(messageType: ProtoEnvelope.self, from: input) == envelope)
        }
    }

    @Test("malformed streams fail with typed errors")
    func malformed() throws {
        var decoder = EnvelopeStreamDecoder(maxFrameLength: 16)
        #expect(throws: EnvelopeFramingError.frameTooLarge(length: 100, limit: 16)) { try decoder.feed([100]) }
        var badPrefix = EnvelopeStreamDecoder()
        #expect(throws: EnvelopeFramingError.malformedLengthPrefix) {
            try badPrefix.feed([UInt8](repeating: 0xFF, count: 11))
        }
        var badBody = EnvelopeStreamDecoder()
        #expect(throws: EnvelopeFramingError.invalidEnvelope) { try badBody.feed([2, 0xFF, 0xFF]) }
    }
}
