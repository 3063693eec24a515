import MQTTCore
import NIOCore
import Testing

/// The decoder reuses the previous PUBLISH's topic string when the bytes repeat (no allocation, no second
/// validation); these tests pin down that reuse happens, and that it never changes what is decoded.
@Suite("PUBLISH topic reuse in the decoder")
struct TopicReuseTests {
    /// A QoS 0 PUBLISH of `topicBytes` with a one-byte payload.
    static func publish(_ topicBytes: [UInt8]) -> [UInt8] {
        Wire.packet(0x30, Wire.bytes(topicBytes) + [0x2A])
    }

    static func decodeTopics(_ topics: [[UInt8]]) throws -> [String] {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: topics.flatMap(publish))
        var decoded: [String] = []
        while let packet = try decoder.decode(from: &buffer) {
            guard case .publish(let publish) = packet else {
                Issue.record("not a PUBLISH: \(packet)")
                return decoded
            }
            decoded.append(publish.topic)
        }
        return decoded
    }

    /// The address of a native string's UTF-8 storage (long enough not to be a small, inline string).
    static func storageAddress(_ string: String) -> UnsafeRawPointer? {
        var copy = string
        return copy.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    @Test("a repeated topic reuses the previous string's storage")
    func repeatedTopicIsReused() throws {
        let topic = Array("chat/rooms/lobby/messages".utf8)  // longer than a small string
        let decoded = try Self.decodeTopics([topic, topic, topic])
        #expect(decoded == Array(repeating: "chat/rooms/lobby/messages", count: 3))
        let addresses = decoded.map(Self.storageAddress)
        #expect(addresses[0] != nil)
        #expect(addresses[1] == addresses[0])
        #expect(addresses[2] == addresses[0])
    }

    @Test("a different topic, even of the same length, is decoded afresh")
    func differentTopicIsDecoded() throws {
        let decoded = try Self.decodeTopics([Array("rooms/a".utf8), Array("rooms/b".utf8), Array("rooms/a".utf8)])
        #expect(decoded == ["rooms/a", "rooms/b", "rooms/a"])
    }

    @Test("canonically equivalent but different bytes are not reused (MQTT-4.7.3-4)")
    func equivalentSpellingsStayDistinct() throws {
        let precomposed = Array("caf\u{E9}".utf8)
        let decomposed = Array("cafe\u{301}".utf8)
        let decoded = try Self.decodeTopics([precomposed, decomposed, precomposed])
        #expect(decoded.map { Array($0.utf8) } == [precomposed, decomposed, precomposed])
    }

    @Test("an invalid topic after a valid one is still rejected", arguments: [
        (Array("a/+".utf8), MQTTCodecError.wildcardInTopicName),
        ([0x61, 0x00], MQTTCodecError.nullCharacterInString),
        ([0x61, 0xFF], MQTTCodecError.invalidUTF8),
    ] as [([UInt8], MQTTCodecError)])
    func invalidTopicAfterValidOne(topic: [UInt8], expected: MQTTCodecError) throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: Self.publish(Array("a".utf8)) + Self.publish(topic))
        _ = try decoder.decode(from: &buffer)
        #expect(throws: expected) { try decoder.decode(from: &buffer) }
    }

    @Test("a repeated topic at QoS 1 and 2 keeps its packet identifier, payload and flags; identifier 0 is refused")
    func repeatedTopicWithPacketIdentifier() throws {
        let topic = Wire.bytes(Array("sensors/hall/temperature".utf8))
        var decoder = MQTTPacketDecoder()
        // QoS 1, then QoS 2 with DUP and RETAIN, then QoS 2 with an empty payload, all on the same topic.
        var buffer = ByteBuffer(
            bytes: Wire.packet(0x32, topic + [0x12, 0x34, 0x01, 0x02])
                + Wire.packet(0x3D, topic + [0xFF, 0xFE, 0x03])
                + Wire.packet(0x34, topic + [0x00, 0x07]))
        var decoded: [PublishPacket] = []
        while let packet = try decoder.decode(from: &buffer) {
            guard case .publish(let publish) = packet else {
                Issue.record("not a PUBLISH: \(packet)")
                return
            }
            decoded.append(publish)
        }
        #expect(decoded.map(\.packetID) == [0x1234, 0xFFFE, 0x0007])
        #expect(decoded.map { Array($0.payload.readableBytesView) } == [[0x01, 0x02], [0x03], []])
        #expect(decoded.map(\.qos) == [.atLeastOnce, .exactlyOnce, .exactlyOnce])
        #expect(decoded.map(\.dup) == [false, true, false])
        #expect(decoded.map(\.retain) == [false, true, false])
        #expect(decoded.allSatisfy { $0.topic == "sensors/hall/temperature" })

        var zero = ByteBuffer(bytes: Wire.packet(0x32, topic + [0x00, 0x00, 0x01]))
        #expect(throws: MQTTCodecError.zeroPacketIdentifier) { try decoder.decode(from: &zero) }
        // The header ends inside the identifier: the packet is refused as short, as without reuse.
        var short = ByteBuffer(bytes: Wire.packet(0x32, topic + [0x00]))
        var fresh = MQTTPacketDecoder()
        var shortFresh = short
        let reuseError = #expect(throws: MQTTCodecError.self) { try decoder.decode(from: &short) }
        let freshError = #expect(throws: MQTTCodecError.self) { try fresh.decode(from: &shortFresh) }
        #expect(reuseError == freshError)
    }
}
