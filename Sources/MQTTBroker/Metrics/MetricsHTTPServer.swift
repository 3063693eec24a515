import NIOCore
import NIOHTTP1
import NIOPosix

/// The metrics listener: a small HTTP/1.1 server that answers `GET /metrics` with the broker's metrics in the
/// Prometheus text exposition format, 404 for any other path and 405 for any other method on `/metrics`.
///
/// It runs on the broker's SwiftNIO event loop group with NIOHTTP1's pipeline (keep-alive and pipelining, as
/// Prometheus uses them). Its connections are few and a scrape is small: the one thing a scrape does on the broker
/// core's loop is copy its counters (``BrokerMetricsSnapshot``), and the text is rendered where the request arrived.
enum MetricsHTTPServer {
    /// Produces the body of one `/metrics` response, or nil when the broker is not running (then 503).
    typealias Scrape = @Sendable () async throws -> [UInt8]?

    /// Binds `listener` on `group` and serves scrapes with `scrape`; completes with the server channel.
    static func bind(
        _ listener: BrokerConfiguration.MetricsListener, group: any EventLoopGroup, scrape: @escaping Scrape
    ) -> EventLoopFuture<any Channel> {
        ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(scrape: scrape))
                }
            }
            .bind(host: listener.host, port: listener.port)
    }
}

/// One HTTP connection to the metrics listener.
final class MetricsHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The content type of the Prometheus text exposition format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"
    static let path = "/metrics"

    private let scrape: MetricsHTTPServer.Scrape
    /// The request being received; answered at its end (a body, which no valid request here has, is ignored).
    private var request: HTTPRequestHead?

    init(scrape: @escaping MetricsHTTPServer.Scrape) {
        self.scrape = scrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard path == Self.path else {
            write(.notFound, body: Array("not found: the metrics are at \(Self.path)\n".utf8), for: head, context: context)
            return
        }
        guard head.method == .GET else {
            write(.methodNotAllowed, body: Array("only GET is allowed\n".utf8), for: head, context: context, extraHeaders: [("Allow", "GET")])
            return
        }
        // The scrape hops to the broker core's loop; the pipeline holds back pipelined requests until this
        // response has ended, so answers stay in order.
        let promise = context.eventLoop.makePromise(of: [UInt8]?.self)
        promise.completeWithTask(scrape)
        promise.futureResult.assumeIsolated().whenComplete { result in
            guard context.channel.isActive else { return }  // the scraper went away meanwhile
            switch result {
            case .success(let body?):
                self.write(.ok, body: body, for: head, context: context, contentType: Self.contentType)
            case .success(nil), .failure:
                self.write(.serviceUnavailable, body: Array("the broker is not running\n".utf8), for: head, context: context)
            }
        }
    }

    private func write(
        _ status: HTTPResponseStatus, body: [UInt8], for request: HTTPRequestHead, context: ChannelHandlerContext,
        contentType: String = "text/plain; charset=utf-8", extraHeaders: [(String, String)] = []
    ) {
        var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", "\(body.count)")] + extraHeaders)
        let keepAlive = request.isKeepAlive
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if request.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")  // HTTP/1.0 closes unless told otherwise
        }
        let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
        if !keepAlive {
            let channel = context.channel
            sent.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
