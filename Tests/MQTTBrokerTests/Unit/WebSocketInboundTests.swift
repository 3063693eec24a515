import NIOCore
import NIOWebSocket
import Testing

@testable import MQTTBroker

/// The frame rules of MQTT over WebSockets, frame by frame without a socket.
@Suite("WebSocket inbound frame rules")
struct WebSocketInboundTests {
    private func frame(
        _ opcode: WebSocketOpcode, _ bytes: [UInt8] = [1, 2], fin: Bool = true, masked: Bool = true
    ) -> WebSocketFrame {
        let key: WebSocketMaskingKey? = masked ? [1, 2, 3, 4] : nil
        var data = ByteBuffer(bytes: bytes)
        if let key { data.webSocketMask(key) }  // as a client sends it
        return WebSocketFrame(fin: fin, opcode: opcode, maskKey: key, data: data)
    }

    @Test("binary frames and their continuations deliver their unmasked bytes; empty ones nothing")
    func data() {
        var inbound = WebSocketInbound()
        #expect(inbound.receive(frame(.binary, [1, 2], fin: false)) == .deliver(ByteBuffer(bytes: [1, 2])))
        #expect(inbound.receive(frame(.continuation, [], fin: false)) == .ignore)
        #expect(inbound.receive(frame(.continuation, [3], fin: true)) == .deliver(ByteBuffer(bytes: [3])))
        #expect(inbound.receive(frame(.binary, [4])) == .deliver(ByteBuffer(bytes: [4])))
    }

    @Test("protocol errors: unmasked frames, stray continuations, a new message inside a fragmented one, text")
    func violations() {
        var unmasked = WebSocketInbound()
        #expect(unmasked.receive(frame(.binary, masked: false)) == .fail(.protocolError))
        #expect(unmasked.receive(frame(.binary)) == .ignore)  // closing: nothing more counts
        var stray = WebSocketInbound()
        #expect(stray.receive(frame(.continuation)) == .fail(.protocolError))
        var interleaved = WebSocketInbound()
        _ = interleaved.receive(frame(.binary, fin: false))
        #expect(interleaved.receive(frame(.binary)) == .fail(.protocolError))
        var text = WebSocketInbound()
        #expect(text.receive(frame(.text)) == .fail(.unacceptableData))
    }

    @Test("ping gets a pong with its payload, pong nothing, close an echo of its code")
    func control() {
        var inbound = WebSocketInbound()
        #expect(inbound.receive(frame(.ping, [9, 8])) == .pong(ByteBuffer(bytes: [9, 8])))
        #expect(inbound.receive(frame(.pong)) == .ignore)
        #expect(inbound.receive(frame(.connectionClose, [0x03, 0xE9])) == .answerClose(.goingAway))
        #expect(inbound.isClosing)
        var bare = WebSocketInbound()
        #expect(bare.receive(frame(.connectionClose, [])) == .answerClose(nil))
    }
}
