import MQTTCore
import NIOCore
import NIOEmbedded
import Testing

@Suite("NIO handlers through EmbeddedChannel")
struct ChannelHandlerTests {
    private func makeChannel(maximumPacketSize: Int = MQTTPacketDecoder.protocolMaximumPacketSize) throws
        -> EmbeddedChannel
    {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(MQTTPacketDecoderHandler(maximumPacketSize: maximumPacketSize)))
        try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(MQTTPacketEncoderHandler()))
        return channel
    }

    @Test("inbound bytes in uneven chunks become packets")
    func inboundPackets() throws {
        let channel = try makeChannel()
        let stream = goldenPackets.flatMap(\.bytes)
        var offset = 0
        var chunkSize = 1
        while offset < stream.count {
            let end = min(offset + chunkSize, stream.count)
            try channel.writeInbound(ByteBuffer(bytes: Array(stream[offset..<end])))
            offset = end
            chunkSize = chunkSize % 7 + 3
        }
        var received: [MQTTPacket] = []
        while let packet = try channel.readInbound(as: MQTTPacket.self) {
            received.append(packet)
        }
        #expect(received == goldenPackets.map(\.packet))
        #expect(try channel.finish().isClean)
    }

    @Test("outbound packets become the golden bytes")
    func outboundBytes() throws {
        let channel = try makeChannel()
        for golden in goldenPackets {
            try channel.writeOutbound(golden.packet)
            let bytes = try channel.readOutbound(as: ByteBuffer.self)
            #expect(bytes?.bytes == golden.bytes, "\(golden.name)")
        }
        #expect(try channel.finish().isClean)
    }

    @Test("malformed inbound bytes surface the specific codec error")
    func malformedInbound() throws {
        let channel = try makeChannel()
        #expect(throws: MQTTCodecError.unsupportedProtocolLevel(5)) {
            try channel.writeInbound(
                ByteBuffer(bytes: Wire.packet(0x10, Wire.connectHeader(flags: 2, level: 5) + [0] + Wire.string("c"))))
        }
        _ = try? channel.finish()
    }

    @Test("an oversized packet is refused by the handler before its body arrives")
    func oversizedInbound() throws {
        let channel = try makeChannel(maximumPacketSize: 100)
        #expect(throws: MQTTCodecError.packetTooLarge(size: 1_000, maximum: 100)) {
            try channel.writeInbound(ByteBuffer(bytes: [0x30] + Wire.remainingLength(1_000)))
        }
        _ = try? channel.finish()
    }

    @Test("an unencodable outbound packet fails the write with its codec error")
    func unencodableOutbound() throws {
        let channel = try makeChannel()
        #expect(throws: MQTTCodecError.missingPacketIdentifier) {
            try channel.writeOutbound(MQTTPacket.publish(PublishPacket(topic: "t", payload: ByteBuffer(), qos: .atLeastOnce)))
        }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        _ = try? channel.finish()
    }

    @Test("the decoder handler's protocol version reaches the decoder")
    func protocolVersionSwitch() throws {
        let handler = MQTTPacketDecoderHandler()
        #expect(handler.protocolVersion == .v3_1_1)
        handler.protocolVersion = .v3_1
        #expect(handler.decoder.protocolVersion == .v3_1)
    }
}
