public import NIOCore
import CoreMetrics
import Logging
import NIOConcurrencyHelpers

/// The metrics of one broker and the HTTP listener that serves them (``BrokerConfiguration/metricsListener``).
/// Created with the server when a metrics listener is configured; the server binds it after persistence is
/// recovered and before the MQTT listeners, and closes it first when it shuts down.
final class MetricsEndpoint: Sendable {
    let listener: BrokerConfiguration.MetricsListener
    let metrics = BrokerMetrics()
    /// The bound listener, once ``bind(group:server:logger:)`` succeeded and until ``close()``.
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)
    private let boundAddress = NIOLockedValueBox<SocketAddress?>(nil)

    init(listener: BrokerConfiguration.MetricsListener) {
        self.listener = listener
    }

    /// The address the listener is bound to (port 0 resolved); nil before it is bound.
    var address: SocketAddress? { boundAddress.withLockedValue { $0 } }

    /// Binds the listener on `group`; each scrape reads `server`'s core on its loop. Fails with
    /// ``MetricsListenerError`` when the address cannot be bound.
    func bind(group: any EventLoopGroup, server: MQTTBrokerServer, logger: Logger) -> EventLoopFuture<Void> {
        let metrics = self.metrics
        let listener = self.listener
        // The server holds this endpoint and the endpoint's channel holds the server, until close() breaks the
        // cycle at shutdown: a scrape that arrives after that finds no core and gets 503.
        let scrape: MetricsHTTPServer.Scrape = { [server] in
            let recorded: Void? = try await server.withCore { core in metrics.record(BrokerMetricsSnapshot(of: core)) }
            guard recorded != nil else { return nil }
            var body: [UInt8] = []
            metrics.render(into: &body)
            return body
        }
        return MetricsHTTPServer.bind(listener, group: group, scrape: scrape)
            .flatMapErrorThrowing { error in
                throw MetricsListenerError.cannotBind(address: "\(listener.host):\(listener.port)", reason: "\(error)")
            }
            .map { channel in
                self.channel.withLockedValue { $0 = channel }
                self.boundAddress.withLockedValue { $0 = channel.localAddress }
                logger.info("metrics listening", metadata: ["address": "\(channel.localAddress.map(BrokerMetrics.label) ?? "?")"])
            }
    }

    /// Stops listening; idempotent. Open scrape connections end with the channels of the broker's group.
    func close() -> EventLoopFuture<Void>? {
        let channel = self.channel.withLockedValue { channel in
            defer { channel = nil }
            return channel
        }
        return channel?.close()
    }

    /// Wraps `onAccepted`, the broker's own accept callback for the listener bound at `address`, to count each
    /// accepted socket in `mqttchat_connections_total{listener="ADDRESS"}`.
    func countingAccepts(
        at address: SocketAddress, _ onAccepted: @escaping @Sendable (CInt) -> Void
    ) -> @Sendable (CInt) -> Void {
        let counter = metrics.connectionCounter(for: address)
        return { socket in
            counter.increment()
            onAccepted(socket)
        }
    }

    /// Adds to a SwiftNIO server channel, before its accept handler, a handler that counts the sockets it accepts.
    func countAccepts(on serverChannel: any Channel) -> EventLoopFuture<Void> {
        let metrics = self.metrics
        return serverChannel.eventLoop.makeCompletedFuture {
            try serverChannel.pipeline.syncOperations.addHandler(AcceptCounter(metrics: metrics))
        }
    }
}

/// Counts the sockets a SwiftNIO server channel accepts: each one arrives as a read of the server channel.
private final class AcceptCounter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    private let metrics: BrokerMetrics
    /// Made once the channel is bound and its address known (the configured port may be 0), so the listener's
    /// series is there, at 0, before its first connection, as for the sockets the broker accepts itself.
    private var counter: CoreMetrics.Counter?

    init(metrics: BrokerMetrics) {
        self.metrics = metrics
    }

    func channelActive(context: ChannelHandlerContext) {
        makeCounter(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        makeCounter(context: context)
        counter?.increment()
        context.fireChannelRead(data)
    }

    private func makeCounter(context: ChannelHandlerContext) {
        guard counter == nil, let address = context.channel.localAddress else { return }
        counter = metrics.connectionCounter(for: address)
    }
}

/// Why the metrics listener could not start; the broker then does not start either.
public enum MetricsListenerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `address` (as configured) could not be bound, for `reason` (address in use, not an address of this host…).
    case cannotBind(address: String, reason: String)

    public var description: String {
        switch self {
        case .cannotBind(let address, let reason): "metrics listener \(address): \(reason)"
        }
    }
}

extension MQTTBrokerServer {
    /// The address the metrics listener is bound to (port 0 resolved), once ``start()`` returned; nil when
    /// ``BrokerConfiguration/metricsListener`` is nil.
    public var metricsAddress: SocketAddress? { metricsEndpoint?.address }
}
