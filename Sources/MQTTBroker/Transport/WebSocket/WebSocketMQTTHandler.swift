import NIOCore
import NIOWebSocket

/// Sits between NIO's WebSocket frame codec and the MQTT connection (``BrokerConnectionHandler`` or
/// ``ConnectionRelay``) once a `protocol websockets` connection has upgraded: binary frames in become bytes for the
/// connection, bytes out become one binary frame per buffer (the connection already coalesces a flush's packets into
/// few buffers), and each side's close becomes the other's. The rules for each incoming frame are
/// ``WebSocketInbound``'s; this handler only carries them out.
///
/// Close handshake: when the client closes, its close frame is echoed and the connection closed; when the broker
/// closes (DISCONNECT, keepalive, a protocol error), a close frame goes out first and the socket is closed once it is
/// written, without waiting for the client's answer (as mosquitto does). Either way the connection sees the channel
/// go inactive, as on TCP, and publishes the will where MQTT says so.
final class WebSocketMQTTHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private var inbound = WebSocketInbound()
    /// The last frame written: an empty buffer from the connection asks to be told when everything written before it
    /// has gone out (``PipelineChannel``'s flush), and an empty binary frame would be sent to the client instead.
    private var lastWrite: EventLoopFuture<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch inbound.receive(unwrapInboundIn(data)) {
        case .deliver(let bytes):
            context.fireChannelRead(wrapInboundOut(bytes))
        case .ignore:
            break
        case .pong(let payload):
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: payload)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .answerClose(let code):
            sendCloseThenClose(context: context, code: code, promise: nil)
        case .fail(let code):
            sendCloseThenClose(context: context, code: code, promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        guard buffer.readableBytes > 0 else {
            // Nothing to send: complete once the frames before it are written (NIO completes writes in order).
            if let promise {
                if let lastWrite { lastWrite.cascade(to: promise) } else { promise.succeed(()) }
            }
            return
        }
        guard !inbound.isClosing else {
            promise?.fail(ChannelError.outputClosed)  // after a close frame nothing may follow (RFC 6455 5.5.1)
            return
        }
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        lastWrite = written.futureResult
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: buffer)), promise: written)
    }

    /// The connection closes the channel: say goodbye in a close frame first (1000, normal closure).
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, context.channel.isActive, !inbound.isClosing else {
            context.close(mode: mode, promise: promise)
            return
        }
        sendCloseThenClose(context: context, code: .normalClosure, promise: promise)
    }

    /// A frame the codec could not decode (too large, a fragmented or oversized control frame): close with the code
    /// RFC 6455 gives it, then let the connection see the error as on any transport failure.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOWebSocketError, !inbound.isClosing {
            sendCloseThenClose(context: context, code: Self.closeCode(for: error), promise: nil)
        }
        context.fireErrorCaught(error)
    }

    /// RFC 6455 7.4.1: 1009 for a frame above the size limit, 1002 for a malformed control frame.
    private static func closeCode(for error: NIOWebSocketError) -> WebSocketErrorCode {
        switch error {
        case .invalidFrameLength: .messageTooLarge
        default: .protocolError
        }
    }

    private func sendCloseThenClose(
        context: ChannelHandlerContext, code: WebSocketErrorCode?, promise: EventLoopPromise<Void>?
    ) {
        inbound.closeSent()
        var payload = context.channel.allocator.buffer(capacity: 2)
        if let code { payload.write(webSocketErrorCode: code) }
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
            loopBoundContext.value.close(mode: .all, promise: promise)
        }
    }
}
