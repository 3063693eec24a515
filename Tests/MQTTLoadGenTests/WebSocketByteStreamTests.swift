@testable import MQTTLoadGen
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// The frames `--transport ws` writes and what it makes of the broker's, without a network.
@Suite("WebSocket byte stream")
struct WebSocketByteStreamTests {
    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WebSocketByteStream())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1883)).wait()
        return channel
    }

    @Test("every write is one final, masked binary frame with a masking key of its own")
    func outboundFramesAreMasked() throws {
        let channel = try channel()
        var keys: [WebSocketMaskingKey] = []
        for index in 0..<8 {
            try channel.writeOutbound(ByteBuffer(bytes: [0x30, 0x01, UInt8(index)]))
            let frame = try #require(try channel.readOutbound(as: WebSocketFrame.self))
            #expect(frame.fin)
            #expect(frame.opcode == .binary)
            // Unmasked by the frame encoder on the wire; the frame carries the key and the plain bytes.
            #expect(frame.data == ByteBuffer(bytes: [0x30, 0x01, UInt8(index)]))
            keys.append(try #require(frame.maskKey))
        }
        // Eight random 32-bit keys: all equal only if the key were fixed.
        #expect(Set(keys.map { Array($0) }).count > 1)
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("binary and continuation payloads pass on as bytes; a ping is answered with a masked pong")
    func inboundFrames() throws {
        let channel = try channel()
        try channel.writeInbound(WebSocketFrame(fin: false, opcode: .binary, data: ByteBuffer(bytes: [0x20, 0x02])))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [0, 0])))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(bytes: [0x20, 0x02]))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(bytes: [0, 0]))
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(bytes: [7])))
        let pong = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(pong.opcode == .pong)
        #expect(pong.maskKey != nil)
        #expect(pong.data == ByteBuffer(bytes: [7]))
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a close frame is answered with a close frame and closes the connection")
    func closeFrame() throws {
        let channel = try channel()
        var code = ByteBuffer()
        code.write(webSocketErrorCode: .normalClosure)
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: code))
        let answer = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(answer.opcode == .connectionClose)
        #expect(answer.maskKey != nil)
        #expect(!channel.isActive)
    }
}
