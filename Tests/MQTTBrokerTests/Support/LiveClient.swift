import MQTTCore
import NIOCore
import NIOPosix

/// Failures of the test-side MQTT client.
enum LiveClientError: Error {
    /// No packet arrived within the timeout.
    case timedOut
    /// The broker closed the connection while a packet was awaited.
    case connectionClosed
}

/// A tiny MQTT client over a real socket, built from MQTTCore's codec: sends any packet or raw bytes, and hands
/// out received packets one by one with a bounded wait.
final class LiveClient: Sendable {
    let channel: any Channel
    private let inbox: NIOLoopBound<PacketInbox>

    private init(channel: any Channel, inbox: NIOLoopBound<PacketInbox>) {
        self.channel = channel
        self.inbox = inbox
    }

    /// Opens a TCP connection to the broker (no MQTT traffic yet).
    static func open(to address: SocketAddress) async throws -> LiveClient {
        // The inbox is handed out by the initializer itself: looking it up in the pipeline after connect() races
        // with a broker that closes the socket at once (the pipeline is emptied on close).
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let inboxPromise = loop.makePromise(of: NIOLoopBound<PacketInbox>.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let inbox = PacketInbox()
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(MQTTPacketDecoderHandler()))
                        try channel.pipeline.syncOperations.addHandler(inbox)
                        inboxPromise.succeed(NIOLoopBound(inbox, eventLoop: channel.eventLoop))
                    }
                }
                .connect(to: address)
                .get()
        } catch {
            inboxPromise.fail(error)
            throw error
        }
        return LiveClient(channel: channel, inbox: try await inboxPromise.futureResult.get())
    }

    /// Opens a connection and completes CONNECT; returns the client and the CONNACK.
    static func connect(to address: SocketAddress, _ connect: ConnectPacket) async throws -> (LiveClient, ConnAckPacket) {
        let client = try await open(to: address)
        try await client.send(.connect(connect))
        guard case .connack(let connack) = try await client.next() else { throw LiveClientError.connectionClosed }
        return (client, connack)
    }

    func send(_ packet: MQTTPacket) async throws {
        var buffer = channel.allocator.buffer(capacity: 64)
        try MQTTPacketEncoder.encode(packet, into: &buffer)
        try await channel.writeAndFlush(buffer)
    }

    func sendRaw(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    /// The next packet from the broker, waiting at most `timeout`.
    func next(timeout: TimeAmount = .seconds(5)) async throws -> MQTTPacket {
        let inbox = self.inbox
        return try await channel.eventLoop.flatSubmit { inbox.value.next(timeout: timeout) }.get()
    }

    /// The next PUBLISH, acknowledging QoS 1/2 like a well-behaved client (PUBACK / PUBREC+PUBREL...).
    func nextPublish(timeout: TimeAmount = .seconds(5)) async throws -> PublishPacket {
        while true {
            let packet = try await next(timeout: timeout)
            guard case .publish(let publish) = packet else { continue }
            if let id = publish.packetID {
                switch publish.qos {
                case .atLeastOnce: try await send(.puback(PubAckPacket(packetID: id)))
                case .exactlyOnce: try await send(.pubrec(PubRecPacket(packetID: id)))
                case .atMostOnce: break
                }
            }
            return publish
        }
    }

    /// Subscribes and waits for the SUBACK.
    func subscribe(_ filter: String, qos: QoS, packetID: UInt16 = 1) async throws -> SubAckPacket {
        try await send(.subscribe(SubscribePacket(packetID: packetID, subscriptions: [.init(topicFilter: filter, qos: qos)])))
        guard case .suback(let suback) = try await next() else { throw LiveClientError.connectionClosed }
        return suback
    }

    /// Whether the broker closes the connection within `timeout`.
    func closedByBroker(within timeout: TimeAmount = .seconds(5)) async -> Bool {
        let closed = channel.closeFuture.map { true }
        let timer = channel.eventLoop.scheduleTask(in: timeout) { false }
        let first = channel.eventLoop.makePromise(of: Bool.self)
        closed.cascade(to: first)
        timer.futureResult.whenSuccess { first.succeed($0) }
        let result = (try? await first.futureResult.get()) ?? false
        timer.cancel()
        return result
    }

    func close() async {
        try? await channel.close()
    }
}

/// Buffers decoded packets and hands them to one waiter at a time. Confined to its channel's loop.
private final class PacketInbox: ChannelInboundHandler {
    typealias InboundIn = MQTTPacket

    private var queue = CircularBuffer<MQTTPacket>()
    private var waiter: EventLoopPromise<MQTTPacket>?
    private var isClosed = false
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let packet = unwrapInboundIn(data)
        if let waiter {
            self.waiter = nil
            waiter.succeed(packet)
        } else {
            queue.append(packet)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        isClosed = true
        waiter?.fail(LiveClientError.connectionClosed)
        waiter = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func next(timeout: TimeAmount) -> EventLoopFuture<MQTTPacket> {
        guard let loop = context?.eventLoop else {
            return MultiThreadedEventLoopGroup.singleton.next().makeFailedFuture(LiveClientError.connectionClosed)
        }
        if let packet = queue.popFirst() { return loop.makeSucceededFuture(packet) }
        if isClosed { return loop.makeFailedFuture(LiveClientError.connectionClosed) }
        let promise = loop.makePromise(of: MQTTPacket.self)
        waiter = promise
        let timer = loop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            guard let self, let waiter = self.waiter, waiter.futureResult === promise.futureResult else { return }
            self.waiter = nil
            waiter.fail(LiveClientError.timedOut)
        }
        promise.futureResult.whenComplete { _ in timer.cancel() }
        return promise.futureResult
    }
}
