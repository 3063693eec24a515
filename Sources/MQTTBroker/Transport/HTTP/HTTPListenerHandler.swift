import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The HTTP side of a `protocol websockets` listener: every request that is not a WebSocket upgrade ends here
/// (NIO's upgrade handler in front of it takes the upgrades). With `http_dir` it serves that directory's files to GET
/// and HEAD; without, it answers 404, as mosquitto's listener without `http_dir` serves nothing. An upgrade that
/// reached it was refused (no `mqtt` or `mqttv3.1` subprotocol, a bad key or version): 400, then close.
///
/// Only a connection's first request can upgrade (NIO's upgrade handler leaves the pipeline after a plain request),
/// so a later upgrade on a keep-alive connection gets the 400 too; browsers open a fresh connection for a WebSocket.
///
/// A connection that stays idle for ``idleTimeout`` between requests is closed, so HTTP sockets cannot pile up
/// before the MQTT connect timeout applies. It also keeps the TLS client identity (`use_identity_as_username`), which
/// arrives before the first request, for the MQTT connection that replaces it on upgrade.
final class HTTPListenerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let files: StaticFileRoot?
    private let idleTimeout: TimeAmount
    private var request: HTTPRequestHead?
    private var idleTimer: Scheduled<Void>?
    /// The verified client certificate's identity on a TLS listener with `use_identity_as_username`.
    private(set) var clientIdentity: TLSClientIdentity?

    init(files: StaticFileRoot?, idleTimeout: TimeAmount) {
        self.files = files
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armIdleTimer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        armIdleTimer(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarmIdleTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarmIdleTimer()  // upgraded: the MQTT connection's own timers take over
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let identity = event as? TLSClientIdentity { clientIdentity = identity }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A refused upgrade is reported here before its request arrives, and gets its 400 then; a parse error got
        // its 400 from NIO's HTTPServerProtocolErrorHandler. Anything else ends the connection.
        if error is NIOWebSocketUpgradeError || error is HTTPParserError { return }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            disarmIdleTimer()
            request = head
        case .body:
            break  // no method we serve has a body worth reading; NIO's decoder streams it, nothing piles up
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        if head.headers.contains(name: "upgrade") {
            return send(.badRequest, "WebSocket upgrade refused: offer the subprotocol mqtt or mqttv3.1\n",
                        to: head, closing: true, context: context)
        }
        guard head.method == .GET || head.method == .HEAD else {
            var headers = HTTPHeaders()
            headers.add(name: "Allow", value: "GET, HEAD")
            return send(.methodNotAllowed, "method not allowed\n", headers: headers, to: head, context: context)
        }
        guard let files else { return send(.notFound, "not found\n", to: head, context: context) }
        let relativePath: String
        switch StaticFilePath.relativePath(forTarget: head.uri) {
        case .success(let path): relativePath = path
        case .failure(.malformed): return send(.badRequest, "bad request target\n", to: head, context: context)
        case .failure(.outsideDirectory): return send(.forbidden, "forbidden\n", to: head, context: context)
        }
        let readingBody = head.method == .GET
        NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop) {
            files.load(relativePath, readingBody: readingBody)
        }.assumeIsolated().whenComplete { [self] result in
            guard context.channel.isActive else { return }
            switch result {
            case .success(.file(let size, let contentType, let body)):
                sendFile(size: size, contentType: contentType, body: body, to: head, context: context)
            case .success(.directory):
                var headers = HTTPHeaders()
                headers.add(name: "Location", value: Self.directoryLocation(for: head.uri))
                send(.movedPermanently, "moved\n", headers: headers, to: head, context: context)
            case .success(.notFound):
                send(.notFound, "not found\n", to: head, context: context)
            case .success(.forbidden):
                send(.forbidden, "forbidden\n", to: head, context: context)
            case .success(.tooLarge):
                send(.forbidden, "file too large to serve\n", to: head, context: context)
            case .failure:
                send(.internalServerError, "internal error\n", to: head, closing: true, context: context)
            }
        }
    }

    /// The target with `/` after its path (before any query), where a directory's `index.html` is served.
    static func directoryLocation(for target: String) -> String {
        let pathEnd = target.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? target.endIndex
        return target[..<pathEnd] + "/" + target[pathEnd...]
    }

    private func sendFile(
        size: Int, contentType: String, body: ByteBuffer?, to request: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(size))
        // The chat page changes with the broker's version: revalidate rather than run a stale copy.
        headers.add(name: "Cache-Control", value: "no-cache")
        writeResponse(.ok, headers: headers, body: body, to: request, closing: false, context: context)
    }

    private func send(
        _ status: HTTPResponseStatus, _ text: String, headers extra: HTTPHeaders = HTTPHeaders(),
        to request: HTTPRequestHead, closing: Bool = false, context: ChannelHandlerContext
    ) {
        var headers = extra
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        let body = request.method == .HEAD ? nil : context.channel.allocator.buffer(string: text)
        writeResponse(status, headers: headers, body: body, to: request, closing: closing, context: context)
    }

    private func writeResponse(
        _ status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer?, to request: HTTPRequestHead,
        closing: Bool, context: ChannelHandlerContext
    ) {
        var headers = headers
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        let keepAlive = request.isKeepAlive && !closing
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let sent = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if keepAlive {
            armIdleTimer(context: context)
        } else {
            sent.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    private func armIdleTimer(context: ChannelHandlerContext) {
        disarmIdleTimer()
        let channel = context.channel
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) { channel.close(promise: nil) }
    }

    private func disarmIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
    }
}
