import NIOCore
import NIOPosix

/// A TCP connection that speaks no protocol at all: it sends the bytes it is told to, keeps whatever arrives, and
/// never closes by itself, so a close it sees was the broker's. For clients that misbehave below MQTT (silence, or
/// plain MQTT on a TLS port).
final class RawConnection: Sendable {
    let channel: any Channel
    private let collector: NIOLoopBound<ByteCollector>

    private init(channel: any Channel, collector: NIOLoopBound<ByteCollector>) {
        self.channel = channel
        self.collector = collector
    }

    static func open(to address: SocketAddress) async throws -> RawConnection {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let collectorPromise = loop.makePromise(of: NIOLoopBound<ByteCollector>.self)
        do {
            let channel = try await ClientBootstrap(group: loop)
                .connectTimeout(.seconds(5))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let collector = ByteCollector()
                        try channel.pipeline.syncOperations.addHandler(collector)
                        collectorPromise.succeed(NIOLoopBound(collector, eventLoop: channel.eventLoop))
                    }
                }
                .connect(to: address)
                .get()
            return RawConnection(channel: channel, collector: try await collectorPromise.futureResult.get())
        } catch {
            collectorPromise.fail(error)
            throw error
        }
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes))
    }

    /// Whether the broker closes the connection within `timeout` (waits no longer than that).
    func closedByBroker(within timeout: TimeAmount) async -> Bool {
        let first = channel.eventLoop.makePromise(of: Bool.self)
        channel.closeFuture.whenComplete { _ in first.succeed(true) }
        let timer = channel.eventLoop.scheduleTask(in: timeout) { first.succeed(false) }
        let result = (try? await first.futureResult.get()) ?? false
        timer.cancel()
        return result
    }

    /// Every byte received so far.
    func received() async throws -> [UInt8] {
        let collector = self.collector
        return try await channel.eventLoop.submit { collector.value.bytes }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// Keeps the received bytes; swallows errors (a reset is just another way of being closed). Loop-confined.
private final class ByteCollector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    var bytes: [UInt8] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        bytes += unwrapInboundIn(data).readableBytesView
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
