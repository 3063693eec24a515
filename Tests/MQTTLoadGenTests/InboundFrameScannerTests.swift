import MQTTCore
import MQTTLoadGen
import NIOCore
import Testing

@Suite("Inbound frame scanner")
struct InboundFrameScannerTests {
    private func wire(_ packets: [MQTTPacket]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        for packet in packets { try MQTTPacketEncoder.encode(packet, into: &buffer) }
        return buffer
    }

    private func stampedPayload(_ stamp: PayloadStamp, size: Int) -> ByteBuffer {
        var payload = ByteBuffer()
        stamp.write(into: &payload, payloadSize: size)
        return payload
    }

    @Test("scan and full decode read the same frames, in order", arguments: [LoadGenConfig.DecodePath.scan, .full])
    func sameFrames(path: LoadGenConfig.DecodePath) throws {
        let stamp = PayloadStamp(publisherIndex: 3, sequence: 77, sendTimeNanos: 123_456_789)
        var buffer = try wire([
            .connack(ConnAckPacket()),
            .publish(PublishPacket(topic: "a/b", payload: stampedPayload(stamp, size: 40), qos: .exactlyOnce, packetID: 9)),
            .publish(PublishPacket(topic: "a", payload: stampedPayload(stamp, size: 16))),
            .pubrel(PubRelPacket(packetID: 9)),
            .pingresp(PingRespPacket()),
        ])
        var scanner = InboundFrameScanner(path: path)
        #expect(try scanner.next(from: &buffer) == .control(.connack(ConnAckPacket())))
        #expect(try scanner.next(from: &buffer) == .publish(qos: .exactlyOnce, packetID: 9, stamp: stamp))
        #expect(try scanner.next(from: &buffer) == .publish(qos: .atMostOnce, packetID: 0, stamp: stamp))
        #expect(try scanner.next(from: &buffer) == .acknowledgement(.pubrel, packetID: 9))
        #expect(try scanner.next(from: &buffer) == .control(.pingresp(PingRespPacket())))
        #expect(try scanner.next(from: &buffer) == nil)
    }

    @Test("an incomplete packet yields nothing and consumes nothing", arguments: [LoadGenConfig.DecodePath.scan, .full])
    func partialPacket(path: LoadGenConfig.DecodePath) throws {
        let whole = try wire([.publish(PublishPacket(topic: "t", payload: ByteBuffer(repeating: 1, count: 200)))])
        var partial = whole.getSlice(at: 0, length: whole.readableBytes - 1) ?? ByteBuffer()
        var scanner = InboundFrameScanner(path: path)
        #expect(try scanner.next(from: &partial) == nil)
        #expect(partial.readableBytes == whole.readableBytes - 1)
    }

    @Test("a PUBLISH with QoS 3 is a typed error")
    func malformed() {
        var buffer = ByteBuffer(bytes: [0x36, 0x03, 0x00, 0x01, 0x61])
        var scanner = InboundFrameScanner(path: .scan)
        #expect(throws: LoadGenError.self) { try scanner.next(from: &buffer) }
    }
}
