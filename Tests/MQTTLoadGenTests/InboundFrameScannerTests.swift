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

    @Test("fed one byte at a time, the scanner reads the same frames and never consumes part of a packet")
    func byteAtATime() throws {
        let stamp = PayloadStamp(publisherIndex: 1, sequence: 2, sendTimeNanos: 3)
        let packets: [MQTTPacket] = [
            .publish(PublishPacket(topic: "room/1", payload: stampedPayload(stamp, size: 16), qos: .atLeastOnce, packetID: 513)),
            .pubcomp(PubCompPacket(packetID: 65535)),
            .publish(PublishPacket(topic: "t", payload: ByteBuffer(repeating: 0, count: 200))),
            .suback(SubAckPacket(packetID: 1, returnCodes: [.granted(.atLeastOnce)])),
        ]
        let whole = try wire(packets)
        var scanner = InboundFrameScanner(path: .scan)
        var buffer = ByteBuffer()
        var frames: [InboundFrame] = []
        for byte in whole.readableBytesView {
            buffer.writeInteger(byte)
            let before = buffer.readerIndex
            if let frame = try scanner.next(from: &buffer) {
                frames.append(frame)
            } else {
                #expect(buffer.readerIndex == before)
            }
        }
        #expect(frames.count == 4)
        #expect(frames.first == .publish(qos: .atLeastOnce, packetID: 513, stamp: stamp))
        #expect(frames.dropFirst().first == .acknowledgement(.pubcomp, packetID: 65535))
        // 200 zero bytes read as a stamp of zeros: long enough for one.
        #expect(frames.dropFirst(2).first == .publish(qos: .atMostOnce, packetID: 0, stamp: PayloadStamp(publisherIndex: 0, sequence: 0, sendTimeNanos: 0)))
        #expect(frames.last == .control(.suback(SubAckPacket(packetID: 1, returnCodes: [.granted(.atLeastOnce)]))))
        #expect(buffer.readableBytes == 0)
    }

    @Test("a payload shorter than a stamp has none")
    func shortPayload() throws {
        var buffer = try wire([.publish(PublishPacket(topic: "t", payload: ByteBuffer(repeating: 7, count: 15)))])
        var scanner = InboundFrameScanner(path: .scan)
        #expect(try scanner.next(from: &buffer) == .publish(qos: .atMostOnce, packetID: 0, stamp: nil))
        #expect(buffer.readableBytes == 0)
    }

    @Test(
        "fields that run past the packet's end are typed errors, even when the next packet's bytes follow",
        arguments: [
            // PUBLISH QoS 0, remaining length 3, topic length 5 (past the end), then a PINGRESP.
            [0x30, 0x03, 0x00, 0x05, 0x61, 0xD0, 0x00],
            // PUBLISH QoS 1, remaining length 3: topic "a" but no room for the packet identifier.
            [0x32, 0x03, 0x00, 0x01, 0x61, 0xD0, 0x00],
            // PUBLISH QoS 0, remaining length 1: not even a topic length.
            [0x30, 0x01, 0x00, 0xD0, 0x00],
            // PUBACK with remaining length 3.
            [0x40, 0x03, 0x00, 0x01, 0x00],
        ] as [[UInt8]]
    )
    func fieldsPastTheEnd(bytes: [UInt8]) {
        var buffer = ByteBuffer(bytes: bytes)
        var scanner = InboundFrameScanner(path: .scan)
        #expect(throws: LoadGenError.self) { try scanner.next(from: &buffer) }
    }

    @Test("a stamp is read at an index of a buffer, relative to nothing but the buffer's own indices")
    func stampAtIndex() {
        let stamp = PayloadStamp(publisherIndex: 0xA1B2_C3D4, sequence: 9, sendTimeNanos: 0x0102_0304_0506_0708)
        var buffer = ByteBuffer(bytes: [0xFF, 0xFF, 0xFF])
        buffer.moveReaderIndex(forwardBy: 1)
        stamp.write(into: &buffer, payloadSize: 16)
        #expect(PayloadStamp.read(from: buffer, at: 3) == stamp)
        #expect(PayloadStamp.read(from: buffer, at: 4) == nil)  // 15 bytes left
        #expect(PayloadStamp.read(from: buffer, at: 0) == nil)  // before the reader index
    }

    @Test("a PUBLISH with QoS 3 is a typed error")
    func malformed() {
        var buffer = ByteBuffer(bytes: [0x36, 0x03, 0x00, 0x01, 0x61])
        var scanner = InboundFrameScanner(path: .scan)
        #expect(throws: LoadGenError.self) { try scanner.next(from: &buffer) }
    }
}
