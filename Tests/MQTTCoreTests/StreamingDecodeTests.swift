import MQTTCore
import NIOCore
import Testing

@Suite("Decoding from a byte stream")
struct StreamingDecodeTests {
    /// All golden packets back to back.
    static let stream: [UInt8] = goldenPackets.flatMap(\.bytes)
    static let expected: [MQTTPacket] = goldenPackets.map(\.packet)

    @Test("fed one byte at a time: nil until complete, then the packet", arguments: goldenPackets)
    func oneByteAtATime(_ golden: GoldenPacket) throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer()
        for (index, byte) in golden.bytes.enumerated() {
            buffer.writeInteger(byte)
            let packet = try decoder.decode(from: &buffer)
            if index < golden.bytes.count - 1 {
                #expect(packet == nil, "packet reported after \(index + 1) of \(golden.bytes.count) bytes")
                #expect(buffer.readerIndex == 0, "an incomplete packet must not move the reader index")
            } else {
                #expect(packet == golden.packet)
                #expect(buffer.readerIndex == golden.bytes.count)
            }
        }
    }

    @Test("many packets coalesced in one buffer decode in order")
    func coalesced() throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: Self.stream + Self.stream)
        let packets = try decodeAll(&buffer, decoder: &decoder)
        #expect(packets == Self.expected + Self.expected)
        #expect(buffer.readableBytes == 0)
    }

    @Test("the stream split at every position decodes to the same packets")
    func splitAtEveryPosition() throws {
        for split in 0...Self.stream.count {
            var decoder = MQTTPacketDecoder()
            var buffer = ByteBuffer(bytes: Array(Self.stream[..<split]))
            var packets = try decodeAll(&buffer, decoder: &decoder)
            buffer.writeBytes(Self.stream[split...])
            packets += try decodeAll(&buffer, decoder: &decoder)
            #expect(packets == Self.expected, "split at \(split)")
            #expect(buffer.readableBytes == 0, "split at \(split)")
        }
    }

    @Test("a trailing partial packet stays in the buffer untouched")
    func trailingPartialPacketStays() throws {
        var decoder = MQTTPacketDecoder()
        let partial: [UInt8] = [0x32, 0x09, 0x00, 0x03]
        var buffer = ByteBuffer(bytes: [0xC0, 0x00] + partial)
        #expect(try decoder.decode(from: &buffer) == .pingreq(PingReqPacket()))
        #expect(try decoder.decode(from: &buffer) == nil)
        #expect(buffer.bytes == partial)
    }

    @Test("an oversized packet is rejected from its fixed header, before its body arrives")
    func oversizedRejectedEarly() {
        var decoder = MQTTPacketDecoder(maximumPacketSize: 1_000)
        // PUBLISH announcing 1,001 bytes; only the fixed header is here.
        var buffer = ByteBuffer(bytes: [0x30] + Wire.remainingLength(1_001))
        #expect(codecError { _ = try decoder.decode(from: &buffer) } == .packetTooLarge(size: 1_001, maximum: 1_000))
        #expect(buffer.readerIndex == 0, "a failed decode leaves the reader index alone")
    }

    @Test("a packet exactly at the maximum is accepted")
    func packetAtMaximumAccepted() throws {
        var decoder = MQTTPacketDecoder(maximumPacketSize: 10)
        let body = Wire.string("t") + Array(repeating: 0x41, count: 7)
        var buffer = ByteBuffer(bytes: Wire.packet(0x30, body))
        let packet = try decoder.decode(from: &buffer)
        #expect(packet == .publish(PublishPacket(topic: "t", payload: payload("AAAAAAA"))))
    }

    @Test("the largest remaining length is accepted by default and waits for its body")
    func protocolMaximumWaitsForBody() throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: [0x30, 0xFF, 0xFF, 0xFF, 0x7F])
        #expect(try decoder.decode(from: &buffer) == nil)
        #expect(MQTTPacketDecoder.protocolMaximumPacketSize == 268_435_455)
    }

    @Test("a malformed packet after good ones fails only when reached")
    func errorAfterGoodPackets() throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: [0xC0, 0x00, 0xD0, 0x00, 0x00, 0x00])
        #expect(try decoder.decode(from: &buffer) == .pingreq(PingReqPacket()))
        #expect(try decoder.decode(from: &buffer) == .pingresp(PingRespPacket()))
        #expect(codecError { _ = try decoder.decode(from: &buffer) } == .reservedPacketType(0))
        #expect(buffer.readerIndex == 4)
    }

    @Test("a bad first byte is rejected before the remaining length arrives")
    func badFirstByteRejectedAlone() {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: [0x63])
        #expect(
            codecError { _ = try decoder.decode(from: &buffer) }
                == .invalidFixedHeaderFlags(packetType: .pubrel, flags: 3))
    }
}
