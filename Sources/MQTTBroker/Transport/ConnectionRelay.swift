import NIOCore

/// The pipeline handler of a socket served on an event loop other than the broker core's: the socket's reads,
/// writes and system calls happen on its own loop, while the MQTT logic runs in a ``BrokerConnectionHandler`` on the
/// core's loop. The bytes of one read batch go over in a single `execute`.
///
/// Back-pressure: at most ``maximumBatchesInFlight`` read batches may wait on the core's loop; beyond that the relay
/// stops reading from the socket (TCP pushes back on the client) until the core has caught up. The core may also
/// pause reading for its own reasons (publisher back-pressure, ``setReadingPausedByCore(_:)``); the socket reads
/// only while neither pauses it.
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
    /// The core asked to stop reading (publisher back-pressure).
    private var pausedByCore = false
    private var context: ChannelHandlerContext?
    /// Whether the listener uses the client certificate's CN as user name.
    private let usesCertificateIdentity: Bool
    /// The socket's descriptor when the broker accepted it itself (the connection may then be parked).
    private let socketDescriptor: CInt?
    /// The parked connection this relay brings back, instead of a new one.
    private let unparking: NIOLoopBound<BrokerConnectionHandler>?
    /// Reading stopped while the core decides whether to park the connection.
    private var pausedForPark = false
    /// Writes the core's one-buffer flushes straight to the socket when the broker accepted it itself.
    private var directWriter: DirectSocketWriter?

    init(
        core: NIOLoopBound<BrokerCore>, usesCertificateIdentity: Bool = false, socketDescriptor: CInt? = nil,
        unparking: NIOLoopBound<BrokerConnectionHandler>? = nil
    ) {
        self.core = core
        self.usesCertificateIdentity = usesCertificateIdentity
        self.socketDescriptor = socketDescriptor
        self.directWriter = socketDescriptor.map(DirectSocketWriter.init(descriptor:))
        self.unparking = unparking
        self.handler = NIOLoopBoundBox.makeEmptyBox(valueType: BrokerConnectionHandler.self, eventLoop: core.eventLoop)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        let core = self.core
        let handler = self.handler
        let usesCertificateIdentity = self.usesCertificateIdentity
        let socketDescriptor = self.socketDescriptor
        let unparking = self.unparking
        let relay = NIOLoopBound(self, eventLoop: context.eventLoop)
        core.eventLoop.execute {
            if let unparking {
                handler.value = unparking.value
                unparking.value.attach(RelayedChannel(channel: channel, relay: relay, handlerBox: handler))
            } else {
                handler.value = BrokerConnectionHandler(
                    core: core.value, relayedChannel: channel, usesCertificateIdentity: usesCertificateIdentity,
                    relay: relay, handlerBox: handler, socketDescriptor: socketDescriptor)
            }
        }
    }

    /// The certificate identity goes over like a read batch, so it arrives before the first MQTT bytes.
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
        pending = []  // the batch takes the storage; an idle connection keeps none
        batchesInFlight += 1
        updateReading()
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
        updateReading()
    }

    /// The core stops (or resumes) reading this socket.
    func setReadingPausedByCore(_ paused: Bool) {
        pausedByCore = paused
        updateReading()
    }

    /// Writes a flush from the core straight to the socket when NIO holds nothing for it (``DirectSocketWriter``).
    /// On ``DirectSocketWriter/Outcome/leftover`` the caller hands the rest to NIO and calls
    /// ``directWriteLeftoverWritten()`` once NIO has written it.
    func writeDirectly(_ buffer: inout ByteBuffer) -> DirectSocketWriter.Outcome {
        guard let channel = context?.channel else { return .declined }
        return directWriter?.write(&buffer, channel: channel) ?? .declined
    }

    /// NIO has written (or failed) what a direct write left: flushes may go straight to the socket again.
    func directWriteLeftoverWritten() {
        directWriter?.leftoverWritten()
    }

    /// Stops reading and returns a duplicate of the socket's descriptor, which stays open when the channel
    /// closes; nil when the channel is already closed (then there is nothing to park).
    func stopReadingForPark(descriptor: CInt) -> CInt? {
        pausedForPark = true
        updateReading()
        guard context?.channel.isActive == true else { return nil }
        return Descriptor.duplicate(descriptor)
    }

    /// The core kept the connection on its channel: read again.
    func parkCalledOff() {
        pausedForPark = false
        updateReading()
    }

    /// Reads from the socket only while the core keeps up and has not paused it.
    private func updateReading() {
        let shouldPause = pausedByCore || pausedForPark || batchesInFlight >= Self.maximumBatchesInFlight
        guard shouldPause != readingPaused, let context else { return }
        readingPaused = shouldPause
        context.channel.setOption(.autoRead, value: !shouldPause).whenFailure { _ in }
        if !shouldPause {
            context.read()
        }
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
