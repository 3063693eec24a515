public import Logging
public import NIOCore
import EpollEventLoop
import MQTTCore
import NIOConcurrencyHelpers
public import NIOPosix
public import ServiceLifecycle

/// The MQTT 3.1/3.1.1 broker: binds the configured listeners and serves clients until shut down.
///
/// All broker state lives on one event loop, so routing takes no locks. With one socket loop
/// (``BrokerConfiguration/eventLoopCount`` 1) and `socket_engine auto`, that is an ``EpollEventLoop`` of the broker's
/// own, which serves the plain-TCP sockets itself with plain system calls (``EpollSocketTransport``); TLS and
/// WebSocket sockets are then served on a loop of `eventLoopGroup` and relayed. Otherwise it is one loop of
/// `eventLoopGroup` (chosen once with `next()`). Accepted sockets are spread over ``BrokerConfiguration/eventLoopCount`` loops of the group: a socket on
/// the core's loop is served in its own pipeline; a socket on another loop does its reads, writes and system calls
/// there and hands its bytes over through a ``ConnectionRelay`` (one `execute` per read batch and per flush, never
/// a lock per message). Use it as a `ServiceLifecycle` service (``run()``) or drive it directly with ``start()``
/// and ``shutdown()``.
public final class MQTTBrokerServer: Service, Sendable {
    private struct State {
        var core: BrokerCore?
        var serverChannels: [any Channel] = []
        var boundAddresses: [SocketAddress] = []
        var isShutDown = false
        var startFuture: EventLoopFuture<[SocketAddress]>?
        var shutdownFuture: EventLoopFuture<Void>?
        /// A group the broker created for its sockets because the given one has a different number of loops.
        var ownedSocketGroup: MultiThreadedEventLoopGroup?
        /// The thread that accepts plain-TCP sockets and watches parked ones; nil when parking is off.
        var socketWatcher: SocketWatcher?
    }

    private let configuration: BrokerConfiguration
    private let logger: Logger
    private let eventLoop: any EventLoop
    private let eventLoopGroup: any EventLoopGroup
    /// The loop of `eventLoopGroup` the listeners' NIO channels use: the core's loop unless the core runs on
    /// ``ownLoop``.
    private let nioLoop: any EventLoop
    /// The broker's own epoll loop, which runs the core and serves plain-TCP sockets; nil when SwiftNIO serves
    /// every socket (``SocketEngine``).
    private let ownLoop: EpollEventLoop?
    /// ``ownLoop`` was stopped by ``shutdown()``: nothing may be submitted to it any more.
    private let ownLoopStopped = NIOLockedValueBox(false)
    /// How many event loops serve client sockets.
    let socketEventLoopCount: Int
    private let state: NIOLoopBoundBox<State>
    /// Connections of WebSocket listeners not upgraded to MQTT yet, which the core does not know: closed at shutdown.
    private let httpPhaseChannels = HTTPPhaseChannels()
    /// The Prometheus metrics and their HTTP listener (Metrics/); nil unless a metrics listener is configured.
    let metricsEndpoint: MetricsEndpoint?

    /// Creates a broker; nothing is bound until ``start()`` or ``run()``.
    public init(
        configuration: BrokerConfiguration,
        logger: Logger = Logger(label: "mqttchat.broker"),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
        self.socketEventLoopCount = max(1, configuration.eventLoopCount)
        self.nioLoop = eventLoopGroup.next()
        var ownLoop: EpollEventLoop?
        if configuration.socketEngine.usesEpoll(eventLoopCount: socketEventLoopCount) {
            do {
                ownLoop = try EpollEventLoop(name: "mqttchat-broker", pollBeforeSleep: configuration.pollBeforeSleep)
            } catch {
                logger.error("could not start the broker's epoll loop; SwiftNIO serves the sockets", metadata: ["error": "\(error)"])
            }
        }
        self.ownLoop = ownLoop
        self.eventLoop = ownLoop ?? nioLoop
        self.state = NIOLoopBoundBox.makeBoxSendingValue(State(), eventLoop: eventLoop)
        self.metricsEndpoint = configuration.metricsListener.map(MetricsEndpoint.init(listener:))
    }

    /// Binds every listener and returns the bound addresses, in listener order (port 0 becomes the real port).
    /// Calling it again returns the same addresses. Throws if a listener cannot be bound (the others are closed).
    @discardableResult
    public func start() async throws -> [SocketAddress] {
        // One TLS context per TLS listener, built off the event loops (it reads files); throws BrokerTLSError.
        let tlsContexts = try await TLSListenerContext.make(for: configuration.listeners)
        // One per WebSocket listener, its http_dir resolved; throws WebSocketListenerError.
        let webSocketContexts = try await WebSocketListenerContext.make(for: configuration)
        guard ownLoop == nil || !ownLoopStopped.withLockedValue({ $0 }) else { throw MQTTBrokerError.alreadyShutDown }
        return try await eventLoop.flatSubmit {
            self.startOnLoop(tlsContexts: tlsContexts, webSocketContexts: webSocketContexts)
        }.get()
    }

    /// Service entry point: starts if needed, runs until graceful shutdown or task cancellation, then closes the
    /// listeners and every connection (publishing nothing extra, not even wills) and returns.
    public func run() async throws {
        try await start()
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: shut down all the same.
        }
        await shutdown()
    }

    /// Stops the listeners and closes all connections without publishing wills; idempotent.
    public func shutdown() async {
        guard let ownLoop else {
            try? await eventLoop.flatSubmit { self.shutdownOnLoop() }.get()
            return
        }
        // The broker's own loop stops once the broker has; a loop that stopped runs no task, so nothing may be
        // submitted to it after that (a second call returns at once).
        let alreadyStopping = ownLoopStopped.withLockedValue { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopping else { return }
        try? await eventLoop.flatSubmit { self.shutdownOnLoop() }.get()
        try? await ownLoop.shutdownGracefully()
    }

    /// Runs `body` with the broker core on its event loop (for tests and diagnostics); nil before ``start()``.
    func withCore<T: Sendable>(_ body: @escaping @Sendable (BrokerCore) -> T) async throws -> T? {
        guard ownLoop == nil || !ownLoopStopped.withLockedValue({ $0 }) else { return nil }
        return try await eventLoop.submit { self.state.value.core.map(body) }.get()
    }

    // MARK: On the broker loop

    private func startOnLoop(
        tlsContexts: [TLSListenerContext?], webSocketContexts: [WebSocketListenerContext?]
    ) -> EventLoopFuture<[SocketAddress]> {
        if let started = state.value.startFuture { return started }
        guard !state.value.isShutDown else {
            return eventLoop.makeFailedFuture(MQTTBrokerError.alreadyShutDown)
        }
        let core = BrokerCore(configuration: configuration, logger: logger, eventLoop: eventLoop)
        if let ownLoop { core.flusher.flushAtIterationEnd(of: ownLoop) }
        state.value.core = core
        let boundCore = NIOLoopBound(core, eventLoop: eventLoop)
        let coreLoop = eventLoop
        let socketGroup = makeSocketGroup()
        let logger = self.logger
        let metricsEndpoint = self.metricsEndpoint
        let httpPhaseChannels = self.httpPhaseChannels
        let listenerContexts = zip(tlsContexts, webSocketContexts)
        let bootstraps = zip(configuration.listeners, listenerContexts).map { listener, contexts in
            let (tls, webSocket) = contexts
            let bootstrap = ServerBootstrap(group: nioLoop, childGroup: socketGroup)
                .serverChannelInitializer { metricsEndpoint?.countAccepts(on: $0) ?? $0.eventLoop.makeSucceededVoidFuture() }
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.socketOption(.so_keepalive), value: 1)
                // Each socket keeps its last receive buffer for reuse: start it small so idle connections cost
                // little; it grows on its own when reads fill it.
                .childChannelOption(.recvAllocator, value: Self.receiveBufferSizing)
                .childChannelOption(.writeBufferWaterMark, value: Self.writabilityMeansNothingQueued)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try tls?.addHandlers(to: channel, logger: logger)  // TLS first, MQTT behind it
                        let identity = tls?.usesIdentityAsUsername ?? false
                        // No socket descriptor: NIO accepted the socket, so no direct writes and no parking.
                        let addConnection: @Sendable (any Channel) throws -> Void = { channel in
                            if channel.eventLoop === coreLoop {
                                try channel.pipeline.syncOperations.addHandler(
                                    BrokerConnectionHandler(core: boundCore.value, usesCertificateIdentity: identity))
                            } else {
                                try channel.pipeline.syncOperations.addHandler(
                                    ConnectionRelay(core: boundCore, usesCertificateIdentity: identity))
                            }
                        }
                        if let webSocket {  // HTTP until the WebSocket upgrade, then MQTT behind the frame handler
                            try webSocket.addHandlers(
                                to: channel, tracking: httpPhaseChannels, addConnection: addConnection)
                        } else {
                            try addConnection(channel)
                        }
                    }
                }
            return (bootstrap: bootstrap, listener: listener)
        }
        let boundBootstraps = NIOLoopBound(bootstraps, eventLoop: coreLoop)
        let ownSockets: (watcher: SocketWatcher, onAccepted: @Sendable (CInt) -> Void)?
        do {
            ownSockets = try makeSocketWatcher(core: boundCore, socketGroup: socketGroup)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let watcher = ownSockets?.watcher
        let binds = PersistenceStore.open(for: core, onSync: metricsEndpoint?.metrics.recordSync).flatMap {
            // Bound like a listener, so a port in use stops the start; first, so it does before clients connect.
            metricsEndpoint?.bind(group: self.eventLoopGroup, server: self, logger: logger).hop(to: coreLoop)
                ?? coreLoop.makeSucceededVoidFuture()
        }.flatMap {  // recover before accepting clients
            EventLoopFuture.whenAllComplete(
                boundBootstraps.value.map { bootstrap, listener in
                    // Plain TCP is accepted by the watcher, which needs each socket's descriptor. WebSocket
                    // listeners need NIO's HTTP and WebSocket handlers, so NIO accepts their sockets.
                    if let ownSockets, listener.tls == nil, listener.transportProtocol == .mqtt {
                        return self.listenOwnSocket(listener, watcher: ownSockets.watcher, onAccepted: ownSockets.onAccepted)
                    }
                    return bootstrap.bind(host: listener.host, port: listener.port).map { channel in
                        ListenerBinding.channel(channel)
                    }
                },
                on: coreLoop)
        }
        let started = binds.flatMapThrowing { results -> [SocketAddress] in
            var bindings: [ListenerBinding] = []
            var firstError: (any Error)?
            for result in results {
                switch result {
                case .success(let binding): bindings.append(binding)
                case .failure(let error): firstError = firstError ?? error
                }
            }
            let channels = bindings.compactMap(\.channel)
            self.state.value.serverChannels = channels
            if let firstError {
                for channel in channels { channel.close(promise: nil) }
                _ = metricsEndpoint?.close()
                self.state.value.serverChannels = []
                watcher?.closeListeners(promise: nil)
                throw firstError
            }
            let addresses = bindings.compactMap(\.address)
            self.state.value.boundAddresses = addresses
            for (address, listener) in zip(addresses, self.configuration.listeners) {
                self.logger.info(
                    "broker listening",
                    metadata: [
                        "address": "\(address)", "tls": "\(listener.tls != nil)",
                        "protocol": "\(listener.transportProtocol.rawValue)",
                    ])
            }
            boundCore.value.startSysPublishing()
            boundCore.value.startBridges(remoteGroup: self.eventLoopGroup)
            return addresses
        }
        state.value.startFuture = started
        return started
    }

    /// Starts the socket watcher, which accepts plain-TCP sockets, when the broker accepts them itself: to serve them
    /// on its own epoll loop, or to park them (then it tells the core how to park and unpark). Returns it with
    /// where an accepted socket goes.
    private func makeSocketWatcher(
        core: NIOLoopBound<BrokerCore>, socketGroup: any EventLoopGroup
    ) throws -> (watcher: SocketWatcher, onAccepted: @Sendable (CInt) -> Void)? {
        guard configuration.parkIdleConnectionsAfter != nil || ownLoop != nil else { return nil }
        let logger = self.logger
        let watcher = try SocketWatcher(
            onParkedReady: { tickets in
                core.eventLoop.execute { core.value.parking?.socketsReady(tickets) }
            },
            onAcceptError: { message in logger.error("\(message)") })
        state.value.socketWatcher = watcher
        if let ownLoop {  // epoll sockets never park: they have no channel to give up
            // SwiftNIO ignores SIGPIPE before its first socket, which may never come now: a write to a socket the
            // client reset must fail with EPIPE, not end the process.
            signal(SIGPIPE, SIG_IGN)
            return (watcher, { socket in
                ListeningSocket.configureAccepted(socket, noDelay: true)
                ownLoop.execute { EpollSocketTransport.serve(socket, core: core.value, loop: ownLoop) }
            })
        }
        let adopter = SocketAdopter(socketGroup: socketGroup, core: core)
        if let delay = configuration.parkIdleConnectionsAfter {
            core.value.parking = ParkingRegistry(
                delay: delay, watcher: watcher, adopter: adopter, eventLoop: core.eventLoop, logger: logger)
        }
        return (watcher, { socket in
            ListeningSocket.configureAccepted(socket)
            adopter.adopt(socket, unparking: nil).whenFailure { error in
                logger.notice("could not take an accepted socket", metadata: ["error": "\(error)"])
            }
        })
    }

    /// Binds a plain-TCP listener on a socket of the broker's own, accepted by the watcher, which hands each
    /// accepted socket to `onAccepted`.
    private func listenOwnSocket(
        _ listener: BrokerConfiguration.Listener, watcher: SocketWatcher, onAccepted: @escaping @Sendable (CInt) -> Void
    ) -> EventLoopFuture<ListenerBinding> {
        eventLoop.makeCompletedFuture {
            let (descriptor, address) = try ListeningSocket.open(host: listener.host, port: listener.port)
            do {
                let accepted = metricsEndpoint?.countingAccepts(at: address, onAccepted) ?? onAccepted
                try watcher.addListener(descriptor, onAccepted: accepted)
            } catch {
                Descriptor.close(descriptor)
                throw error
            }
            return .ownSocket(address)
        }
    }

    /// A bound listener: NIO's server channel, or a socket the watcher accepts on.
    private enum ListenerBinding {
        case channel(any Channel)
        case ownSocket(SocketAddress)

        var channel: (any Channel)? {
            if case .channel(let channel) = self { return channel }
            return nil
        }

        var address: SocketAddress? {
            switch self {
            case .channel(let channel): channel.localAddress
            case .ownSocket(let address): address
            }
        }
    }

    /// Receive buffers start at 64 bytes instead of NIO's 2,048 (a CONNECT is tens of bytes, and NIO keeps each
    /// socket's last buffer for reuse) and grow four-fold per read that fills them, up to 64 KiB.
    static let receiveBufferSizing = ReceiveBufferSizing(minimum: 64, initial: 64, maximum: 65536)

    /// Every broker socket is unwritable from its first unwritten packet until NIO's write queue is empty again
    /// (unwritable above `high`, writable again below `low`; every MQTT packet has at least two bytes, and the one
    /// way NIO gets a single byte, a direct write's leftover, is tracked by ``DirectSocketWriter``). So right
    /// after a flush, `isWritable` tells whether the kernel took everything (``PipelineChannel/flush(reportingWritten:to:)``):
    /// an atomic load, where asking for `bufferedWritableBytes` costs a chain of dynamic casts on every flush.
    /// The broker bounds unwritten output itself (``PendingOutputGate``), so it needs no watermark of NIO's.
    static let writabilityMeansNothingQueued = ChannelOptions.Types.WriteBufferWaterMark(low: 1, high: 1)

    /// The group accepted sockets are spread over: the core's loop alone for one loop, the server's group when it
    /// has exactly ``BrokerConfiguration/eventLoopCount`` loops, otherwise a group of that size the broker owns.
    /// (`ServerBootstrap` only spreads over a whole `MultiThreadedEventLoopGroup`, not over a subset of one.)
    private func makeSocketGroup() -> any EventLoopGroup {
        guard socketEventLoopCount > 1 else { return nioLoop }
        if Array(eventLoopGroup.makeIterator()).count == socketEventLoopCount {
            return eventLoopGroup
        }
        let owned = MultiThreadedEventLoopGroup(numberOfThreads: socketEventLoopCount)
        state.value.ownedSocketGroup = owned
        return owned
    }

    private func shutdownOnLoop() -> EventLoopFuture<Void> {
        if let shutdown = state.value.shutdownFuture { return shutdown }
        state.value.isShutDown = true
        var listenersClosed = state.value.serverChannels.map { $0.close() }
        if let metricsClosed = metricsEndpoint?.close() { listenersClosed.append(metricsClosed.hop(to: eventLoop)) }
        state.value.serverChannels = []
        httpPhaseChannels.closeAll()  // after the listeners: nothing new is accepted behind it
        let watcher = state.value.socketWatcher
        state.value.socketWatcher = nil
        if let watcher {  // stop accepting first; the watcher itself stops once every connection is closed
            let closed = eventLoop.makePromise(of: Void.self)
            watcher.closeListeners(promise: closed)
            listenersClosed.append(closed.futureResult)
        }
        let core = state.value.core.map { NIOLoopBound($0, eventLoop: eventLoop) }
        core?.value.stopBridges()
        let connectionsClosed = (core?.value.shutdown() ?? eventLoop.makeSucceededVoidFuture()).flatMap {
            core?.value.persistence?.close() ?? self.eventLoop.makeSucceededVoidFuture()  // a final snapshot
        }
        let ownedSocketGroup = state.value.ownedSocketGroup
        state.value.ownedSocketGroup = nil
        let done = EventLoopFuture.whenAllComplete(listenersClosed + [connectionsClosed], on: eventLoop).flatMap { _ in
            guard let watcher else { return self.eventLoop.makeSucceededVoidFuture() }
            let stopped = self.eventLoop.makePromise(of: Void.self)
            watcher.stop(promise: stopped)
            return stopped.futureResult
        }.flatMap {
            guard let ownedSocketGroup else { return self.eventLoop.makeSucceededVoidFuture() }
            let stopped = self.eventLoop.makePromise(of: Void.self)
            ownedSocketGroup.shutdownGracefully { _ in stopped.succeed(()) }
            return stopped.futureResult
        }.map {
            self.logger.info("broker stopped")
        }
        state.value.shutdownFuture = done
        return done
    }
}

/// Errors thrown by ``MQTTBrokerServer``.
public enum MQTTBrokerError: Error, Sendable, Hashable {
    /// ``MQTTBrokerServer/start()`` was called after ``MQTTBrokerServer/shutdown()``.
    case alreadyShutDown
}
