import MQTTCore
import NIOCore
import Testing

@Suite("Decoding MQTT 5 from a byte stream")
struct StreamingDecodeV5Tests {
    /// Every MQTT 5 golden packet and AUTH, as what ``MQTTPacketDecoder/decodePacketOrAuth(from:)`` returns.
    static let goldens: [(bytes: [UInt8], packet: MQTTDecodedPacket)] =
        goldenPacketsV5.map { ($0.bytes, .packet($0.packet)) } + goldenAuthPackets.map { ($0.bytes, .auth($0.packet)) }

    @Test("fed one byte at a time: nil until complete, then the packet", arguments: goldens.indices)
    func oneByteAtATime(_ index: Int) throws {
        let golden = Self.goldens[index]
        var decoder = version5Decoder()
        var buffer = ByteBuffer()
        for (offset, byte) in golden.bytes.enumerated() {
            buffer.writeInteger(byte)
            let packet = try decoder.decodePacketOrAuth(from: &buffer)
            if offset < golden.bytes.count - 1 {
                #expect(packet == nil, "packet reported after \(offset + 1) of \(golden.bytes.count) bytes")
                #expect(buffer.readerIndex == 0, "an incomplete packet must not move the reader index")
            } else {
                #expect(packet == golden.packet)
                #expect(buffer.readerIndex == golden.bytes.count)
            }
        }
    }

    @Test("the whole stream split at every position decodes to the same packets")
    func splitAtEveryPosition() throws {
        let stream = Self.goldens.flatMap(\.bytes)
        let expected = Self.goldens.map(\.packet)
        for split in 0...stream.count {
            var decoder = version5Decoder()
            var buffer = ByteBuffer(bytes: Array(stream[..<split]))
            var packets: [MQTTDecodedPacket] = []
            while let packet = try decoder.decodePacketOrAuth(from: &buffer) { packets.append(packet) }
            buffer.writeBytes(stream[split...])
            while let packet = try decoder.decodePacketOrAuth(from: &buffer) { packets.append(packet) }
            #expect(packets == expected, "split at \(split)")
            #expect(buffer.readableBytes == 0, "split at \(split)")
        }
    }

    @Test("consecutive PUBLISH packets to one topic keep their own identifiers and properties")
    func repeatedTopic() throws {
        let first = PublishPacket(topic: "a/b", payload: payload("1"), qos: .atLeastOnce, packetID: 1,
                                  properties: MQTTProperties([.userProperty(key: "n", value: "1")]))
        let second = PublishPacket(topic: "a/b", payload: payload("2"), qos: .atLeastOnce, packetID: 2,
                                   properties: MQTTProperties([.messageExpiryInterval(9)]))
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(.publish(first), protocolVersion: .v5, into: &buffer)
        try MQTTPacketEncoder.encode(.publish(second), protocolVersion: .v5, into: &buffer)
        var decoder = version5Decoder()
        #expect(try decodeAll(&buffer, decoder: &decoder) == [.publish(first), .publish(second)])
    }
}
