import NIOCore

/// The pipeline handler of a socket served on an event loop other than the broker core's: the socket's reads,
/// writes and system calls happen on its own loop, while the MQTT logic runs in a ``BrokerConnectionHandler`` on the
/// core's loop. The bytes of one read batch go over in a single `execute`.
///
/// Back-pressure: at most ``maximumBatchesInFlight`` read batches may wait on the core's loop; beyond that the relay
/// stops reading from the socket (TCP pushes back on the client) until the core has caught up.
final class ConnectionRelay: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// Read batches handed to the core and not yet processed, above which reading pauses.
    static let maximumBatchesInFlight = 4

    private let core: NIOLoopBound<BrokerCore>
    /// The handler on the core's loop; filled in there by the first task this relay sends.
    private let handler: NIOLoopBoundBox<BrokerConnectionHandler?>
    private var pending: [ByteBuffer] = []
    private var batchesInFlight = 0
    private var readingPaused = false
    private var context: ChannelHandlerContext?
    /// [tls] Whether the listener uses the client certificate's CN as user name.
    private let usesCertificateIdentity: Bool

    init(core: NIOLoopBound<BrokerCore>, usesCertificateIdentity: Bool = false) {
        self.core = core
        self.usesCertificateIdentity = usesCertificateIdentity
        self.handler = NIOLoopBoundBox.makeEmptyBox(valueType: BrokerConnectionHandler.self, eventLoop: core.eventLoop)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        let core = self.core
        let handler = self.handler
        let usesCertificateIdentity = self.usesCertificateIdentity
        core.eventLoop.execute {
            handler.value = BrokerConnectionHandler(
                core: core.value, relayedChannel: channel, usesCertificateIdentity: usesCertificateIdentity)
        }
    }

    /// [tls] The certificate identity goes over like a read batch, so it arrives before the first MQTT bytes.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let identity = event as? TLSClientIdentity {
            let handler = self.handler
            core.eventLoop.execute {
                handler.value?.certificateIdentified(identity)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        pending.append(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        defer { context.fireChannelReadComplete() }
        guard !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        batchesInFlight += 1
        if batchesInFlight >= Self.maximumBatchesInFlight, !readingPaused {
            readingPaused = true
            context.channel.setOption(.autoRead, value: false).whenFailure { _ in }
        }
        let handler = self.handler
        let relay = NIOLoopBound(self, eventLoop: context.eventLoop)
        core.eventLoop.execute {
            if let connection = handler.value {
                for bytes in batch {
                    connection.received(bytes)
                }
            }
            relay.eventLoop.execute {
                relay.value.batchProcessed()
            }
        }
    }

    private func batchProcessed() {
        batchesInFlight -= 1
        guard readingPaused, batchesInFlight < Self.maximumBatchesInFlight, let context else { return }
        readingPaused = false
        context.channel.setOption(.autoRead, value: true).whenFailure { _ in }
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let handler = self.handler
        core.eventLoop.execute {
            handler.value?.transportInactive()
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let description = "\(error)"
        let handler = self.handler
        core.eventLoop.execute {
            handler.value?.transportFailed(description)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        let handler = self.handler
        core.eventLoop.execute {
            handler.value?.relayRemoved()
            handler.value = nil
        }
    }
}
