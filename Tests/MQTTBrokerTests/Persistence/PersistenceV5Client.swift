import MQTTCore
import NIOCore
import NIOPosix

/// A raw MQTT 5 client for the persistence tests: ``LiveClient`` with a decoder and an encoder at protocol level 5
/// (``LiveClient`` speaks 3.1.1 only). Sends packets as given and returns the broker's packets one at a time.
final class PersistenceV5Client: Sendable {
    let channel: any Channel
    private let inbox: NIOLoopBound<V5PacketInbox>

    private init(channel: any Channel, inbox: NIOLoopBound<V5PacketInbox>) {
        self.channel = channel
        self.inbox = inbox
    }

    /// Connects, sends `connect` (its protocol level must be 5) and returns the client and the CONNACK.
    static func connect(to address: SocketAddress, _ connect: ConnectPacket) async throws -> (PersistenceV5Client, ConnAckPacket) {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let inboxPromise = loop.makePromise(of: NIOLoopBound<V5PacketInbox>.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let decoder = MQTTPacketDecoderHandler(acceptsVersion5: true)
                        decoder.protocolVersion = .v5
                        let inbox = V5PacketInbox()
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(decoder))
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
        let client = PersistenceV5Client(channel: channel, inbox: try await inboxPromise.futureResult.get())
        try await client.send(.connect(connect))
        guard case .connack(let connack) = try await client.next() else { throw LiveClientError.connectionClosed }
        return (client, connack)
    }

    func send(_ packet: MQTTPacket) async throws {
        var buffer = channel.allocator.buffer(capacity: 64)
        try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer)
        try await channel.writeAndFlush(buffer)
    }

    /// The next packet from the broker, waiting at most `timeout`.
    func next(timeout: TimeAmount = .seconds(5)) async throws -> MQTTPacket {
        let inbox = self.inbox
        return try await channel.eventLoop.flatSubmit { inbox.value.next(timeout: timeout) }.get()
    }

    /// The next PUBLISH, acknowledged (QoS 1 only: these tests use no QoS 2).
    func nextPublish(timeout: TimeAmount = .seconds(5)) async throws -> PublishPacket {
        while true {
            guard case .publish(let publish) = try await next(timeout: timeout) else { continue }
            if let id = publish.packetID { try await send(.puback(PubAckPacket(packetID: id))) }
            return publish
        }
    }

    /// Publishes at QoS 1 and waits for the PUBACK.
    func publishQoS1(_ topic: String, _ payload: String, id: UInt16, properties: MQTTProperties = .none) async throws {
        try await send(
            .publish(PublishPacket(topic: topic, payload: ByteBuffer(string: payload), qos: .atLeastOnce, packetID: id, properties: properties)))
        guard case .puback(let ack) = try await next(), ack.packetID == id else { throw LiveClientError.connectionClosed }
    }

    /// Subscribes with `subscriptions` and `properties` and returns the SUBACK.
    func subscribe(_ subscriptions: [SubscribePacket.Subscription], id: UInt16, properties: MQTTProperties = .none) async throws -> SubAckPacket {
        try await send(.subscribe(SubscribePacket(packetID: id, subscriptions: subscriptions, properties: properties)))
        guard case .suback(let suback) = try await next() else { throw LiveClientError.connectionClosed }
        return suback
    }

    /// Sends DISCONNECT (with `properties`) and closes the connection.
    func disconnect(properties: MQTTProperties = .none) async throws {
        try await send(.disconnect(DisconnectPacket(properties: properties)))
        try? await channel.close()
    }

    func close() async {
        try? await channel.close()
    }
}

/// Buffers decoded packets and hands them to one waiter at a time (as ``LiveClient``'s inbox). Confined to its
/// channel's loop.
private final class V5PacketInbox: ChannelInboundHandler {
    typealias InboundIn = MQTTPacket

    private var queue = CircularBuffer<MQTTPacket>()
    private var waiter: EventLoopPromise<MQTTPacket>?
    private var isClosed = false
    private var loop: (any EventLoop)?

    func handlerAdded(context: ChannelHandlerContext) {
        loop = context.eventLoop
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
        guard let loop else { return MultiThreadedEventLoopGroup.singleton.next().makeFailedFuture(LiveClientError.connectionClosed) }
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
