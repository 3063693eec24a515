import NIOCore
import NIOHTTP1
import NIOWebSocket

/// MQTT over WebSockets for the generator's connections (`--transport ws`): an HTTP/1.1 upgrade with subprotocol
/// `mqtt`, after which ``WebSocketByteStream`` turns binary frames into the plain bytes the MQTT handlers read and
/// write. The handlers themselves do not change, so both transports measure the same client work.
enum WebSocketTransport {
    /// Largest frame accepted from the broker. A broker may put many MQTT packets, or one packet of up to the
    /// generator's 16 MiB payload limit, into one frame; NIOWebSocket's 16 KiB default would close the connection.
    static let maxFrameSize = 32 * 1024 * 1024

    /// Sets up `channel` (not yet connected) for the upgrade. Once the broker has switched protocols, the HTTP
    /// handlers are gone, ``WebSocketByteStream`` and then the handler from `makeHandler` are added, and `upgraded`
    /// succeeds; an answer without the upgrade, an error or a close fails it.
    static func configure(
        _ channel: any Channel, host: String, port: Int, path: String, upgraded: EventLoopPromise<Void>,
        makeHandler: @escaping @Sendable () throws -> any ChannelHandler
    ) -> EventLoopFuture<Void> {
        let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: maxFrameSize) { channel, _ in
            channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                if let requester = try? pipeline.handler(type: WebSocketUpgradeRequester.self) {
                    pipeline.removeHandler(requester, promise: nil)
                }
                try pipeline.addHandler(WebSocketByteStream())
                try pipeline.addHandler(makeHandler())
                upgraded.succeed()
            }
        }
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHTTPClientHandlers(
                withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            try pipeline.addHandler(
                WebSocketUpgradeRequester(host: host, port: port, path: path, upgraded: upgraded))
        }
    }
}

/// Sends the upgrade request once the connection is up (NIOHTTPClientUpgradeHandler adds the `Upgrade`,
/// `Connection` and `Sec-WebSocket-*` headers to it) and reports a failed upgrade: the broker answered with a plain
/// HTTP response, an error was raised, or the connection closed first.
final class WebSocketUpgradeRequester: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let port: Int
    private let path: String
    private let upgraded: EventLoopPromise<Void>

    init(host: String, port: Int, path: String, upgraded: EventLoopPromise<Void>) {
        self.host = host
        self.port = port
        self.path = path
        self.upgraded = upgraded
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendRequest(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendRequest(context: context)
        context.fireChannelActive()
    }

    private func sendRequest(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "\(host):\(port)")
        headers.add(name: "Sec-WebSocket-Protocol", value: "mqtt")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only a response the upgrade handler let through gets here: the broker did not switch protocols.
        if case .head(let head) = unwrapInboundIn(data) {
            let status = "\(head.status.code) \(head.status.reasonPhrase)"
            fail(context: context, "the broker answered the WebSocket upgrade with \(status)")
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, "WebSocket upgrade failed: \(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        upgraded.fail(LoadGenError.closedDuringHandshake)
        context.fireChannelInactive()
    }

    private func fail(context: ChannelHandlerContext, _ reason: String) {
        upgraded.fail(LoadGenError.connectionFailed(reason))
        context.close(promise: nil)
    }
}

/// Plain bytes over WebSocket frames, for the MQTT handlers behind it. Inbound: the payload of binary and
/// continuation frames (a broker may split one MQTT packet over frames or put several into one; the handlers
/// reassemble packets from bytes either way), pings answered, a close frame closes, a text frame is an error.
/// Outbound: each buffer becomes one final binary frame with a fresh random masking key, as RFC 6455 requires of
/// every client frame (NIOWebSocket's encoder applies the mask).
final class WebSocketByteStream: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .binary, .continuation:
            context.fireChannelRead(wrapInboundOut(frame.unmaskedData))
        case .text:
            // MQTT-6.0.0-1: MQTT travels in binary frames only; a recipient of any other data frame closes.
            context.fireErrorCaught(LoadGenError.malformedPacket("a WebSocket text frame"))
            context.close(promise: nil)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            sendClose(context: context)
            context.close(promise: nil)
        default:
            break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = WebSocketFrame(fin: true, opcode: .binary, maskKey: .random(), data: unwrapOutboundIn(data))
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // A polite close frame before the TCP close, so the broker sees a normal WebSocket close.
        if mode == .all, context.channel.isActive { sendClose(context: context) }
        context.close(mode: mode, promise: promise)
    }

    private func sendClose(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }
}
