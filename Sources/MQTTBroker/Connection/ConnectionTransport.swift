import NIOCore

/// Where a ``BrokerConnectionHandler`` writes its bytes: into its own pipeline when the socket is on the core's
/// event loop, or through a ``RelayedChannel`` when the socket is served on another loop, or straight to its socket
/// when the core runs on the broker's own epoll loop. Either way the buffers of
/// one batch are written at flush time, the last one with a promise, so the socket's loop can report once per
/// batch how many bytes left memory (the pending-output bound, ``PendingOutputGate``).
enum ConnectionTransport {
    /// The handler sits in the socket's pipeline, on the core's loop.
    case pipeline(PipelineChannel)
    /// The socket lives on another loop; writes are batched and handed over once per flush.
    case relayed(RelayedChannel)
    /// The connection is parked: no NIO channel, the socket is watched by the broker's ``SocketWatcher``. Writes
    /// wait here until the connection is back on a channel (a flush brings it back).
    case parked(ParkedSocket)
    /// The socket is served on the core's own ``EpollEventLoop``, with no NIO channel (``SocketEngine``).
    case epoll(EpollSocketTransport)

    /// Queues `buffer` for the socket without flushing. An `ownBuffer` (the handler's coalescing buffer, shared
    /// with nothing) may be reused once written.
    func write(_ buffer: ByteBuffer, ownBuffer: Bool = false) {
        switch self {
        case .pipeline(let pipeline): pipeline.write(buffer, ownBuffer: ownBuffer)
        case .relayed(let relayed): relayed.write(buffer)
        case .parked(let parked): parked.pendingWrites.append(buffer)
        case .epoll(let socket): socket.write(buffer, ownBuffer: ownBuffer)
        }
    }

    /// Sends everything written so far (`bytes` in all); `handler.outputWritten(bytes)` runs on the core's loop
    /// once the socket has written the batch, or failed to.
    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        switch self {
        case .pipeline(let pipeline): pipeline.flush(reportingWritten: bytes, to: handler)
        case .relayed(let relayed): relayed.flush(reportingWritten: bytes, to: handler)
        case .parked(let parked):
            parked.pendingReportedBytes += bytes
            handler.unparkForOutput()
        case .epoll(let socket): socket.flush(reportingWritten: bytes, to: handler)
        }
    }

    /// The client's address (kept by NIO until the channel's handlers have seen it close).
    var remoteAddress: SocketAddress? {
        switch self {
        case .pipeline(let pipeline): pipeline.context.channel.remoteAddress
        case .relayed(let relayed): relayed.channel.remoteAddress
        case .parked(let parked): parked.remoteAddress
        case .epoll(let socket): socket.remoteAddress
        }
    }

    /// Closes the socket after what was flushed. A parked socket is closed by its handler
    /// (``BrokerConnectionHandler/closeParked(_:)``), which knows the watcher.
    func close() {
        switch self {
        case .pipeline(let pipeline): pipeline.close()
        case .relayed(let relayed): relayed.close()
        case .parked: break
        case .epoll(let socket): socket.close()
        }
    }

    /// Stops (or restarts) reading from the socket on behalf of the core (publisher back-pressure).
    func setReadingPausedByCore(_ paused: Bool) {
        switch self {
        case .pipeline(let pipeline): pipeline.setReadingPaused(paused)
        case .relayed(let relayed): relayed.setReadingPausedByCore(paused)
        case .parked: break  // applied when the connection is back on a channel
        case .epoll(let socket): socket.setReadingPaused(paused)
        }
    }
}

/// A parked connection's socket, and what was written to the connection since it was parked.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class ParkedSocket {
    /// The socket, owned here until it is handed back to NIO.
    let descriptor: CInt
    /// The ticket the watcher reports the socket with.
    let ticket: SocketWatcher.Ticket
    /// Buffers written while parked, in order; written to the channel the connection gets back.
    @exclusivity(unchecked) var pendingWrites: [ByteBuffer] = []
    /// The flushed bytes among them, reported written once the new channel has written them.
    @exclusivity(unchecked) var pendingReportedBytes = 0
    /// The client's address, kept from the channel for the logs (a parked connection still logs where it is).
    let remoteAddress: SocketAddress?
    /// The socket was handed to NIO; the channel is on its way.
    @exclusivity(unchecked) var isUnparking = false
    /// The connection was closed while its channel was on its way: close the channel when it arrives.
    @exclusivity(unchecked) var closeWhenAttached = false

    init(descriptor: CInt, ticket: SocketWatcher.Ticket, remoteAddress: SocketAddress?) {
        self.descriptor = descriptor
        self.ticket = ticket
        self.remoteAddress = remoteAddress
    }
}

/// The writes of a handler that sits in its socket's pipeline, on the core's loop. Confined to that loop (hence its
/// `@exclusivity(unchecked)` property, see ``BrokerCore``).
///
/// Each buffer goes into NIO's write queue when the next one arrives; only the last is held back, so the flush can
/// attach the one promise that reports the batch written. (No array of pending buffers: it would stay allocated on
/// every idle connection.)
///
/// A flush with nothing in NIO's queue goes straight to the socket when the broker accepted the socket itself and
/// knows its descriptor (plain TCP, ``BrokerConnectionHandler/socketDescriptor``): one `write(2)`
/// (``DirectSocketWriter``). What the kernel does not take goes to NIO as before.
final class PipelineChannel {
    let context: ChannelHandlerContext
    /// Writes flushes straight to the socket; nil for a socket the broker did not accept itself (TLS, or parking
    /// turned off).
    @exclusivity(unchecked) private var directWriter: DirectSocketWriter?
    @exclusivity(unchecked) private var held: ByteBuffer?
    /// Whether ``held`` is the handler's own coalescing buffer (a shared payload is never reused).
    @exclusivity(unchecked) private var heldIsOwnBuffer = false

    init(context: ChannelHandlerContext, descriptor: CInt? = nil) {
        self.context = context
        self.directWriter = descriptor.map(DirectSocketWriter.init(descriptor:))
    }

    func write(_ buffer: ByteBuffer, ownBuffer: Bool) {
        if let previous = held {
            context.write(NIOAny(previous), promise: nil)
        }
        held = buffer
        heldIsOwnBuffer = ownBuffer
    }

    /// Usually the kernel takes the whole batch inside the flush: nothing is left in NIO's queue, the batch is
    /// reported written at once, and its buffer goes back to the core for the next batch (a promise, its callback
    /// and a new buffer per flush were five allocations per flush). Otherwise an empty write queued behind the
    /// batch reports it once NIO has written everything before it.
    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        guard var last = held else { return }
        held = nil
        switch directWriter?.write(&last, channel: context.channel) {
        case .written?:
            if heldIsOwnBuffer { handler.core.recycleOutputBuffer(consume last) }
            handler.outputWritten(bytes)
            return
        case .leftover?:
            let promise = context.eventLoop.makePromise(of: Void.self)
            promise.futureResult.assumeIsolated().whenComplete { [self] _ in
                directWriter?.leftoverWritten()
                handler.outputWritten(bytes)
            }
            context.writeAndFlush(NIOAny(last), promise: promise)
            return
        case .declined?, nil:
            break
        }
        context.writeAndFlush(NIOAny(last), promise: nil)
        // Writable right after the flush: nothing is left in NIO's queue (the broker's sockets are unwritable from
        // their first queued packet, ``MQTTBrokerServer/writabilityMeansNothingQueued``). A closed channel's queue
        // was failed, which counts as written, as a failed promise did.
        guard !context.channel.isWritable && context.channel.isActive else {
            // NIO let go of the written bytes, so `last` is the only reference left: handing it over (not a
            // copy) lets the pool keep its storage.
            if heldIsOwnBuffer { handler.core.recycleOutputBuffer(consume last) }
            handler.outputWritten(bytes)
            return
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { _ in handler.outputWritten(bytes) }
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(capacity: 0)), promise: promise)
    }

    func close() {
        if let last = held {
            held = nil
            context.write(NIOAny(last), promise: nil)
        }
        context.flush()
        context.close(promise: nil)
    }

    func setReadingPaused(_ paused: Bool) {
        try? context.channel.syncOptions?.setOption(.autoRead, value: !paused)
        if !paused {
            context.read()
        }
    }
}

/// The core-loop side of a socket served on another event loop: collects the buffers written during one batch and
/// hands them to the socket's loop with a single `execute` per flush, so the per-message path crosses threads once
/// per batch and takes no lock of ours. Tasks from one loop to another run in order, so writes keep their order.
/// The socket's loop answers with one `execute` per batch once the batch is written.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` property, see ``BrokerCore``).
final class RelayedChannel {
    let channel: any Channel
    /// The relay in the socket's pipeline, to pause reading on behalf of the core, and to write a batch of one
    /// buffer straight to the socket when the broker accepted it itself (``ConnectionRelay/writeDirectly(_:)``).
    private let relay: NIOLoopBound<ConnectionRelay>?
    @exclusivity(unchecked) private var pending: [ByteBuffer] = []

    /// The relay's reference to the handler, cleared when the handler parks so that the closing channel's events
    /// no longer reach it.
    let handlerBox: NIOLoopBoundBox<BrokerConnectionHandler?>?

    init(
        channel: any Channel, relay: NIOLoopBound<ConnectionRelay>? = nil,
        handlerBox: NIOLoopBoundBox<BrokerConnectionHandler?>? = nil
    ) {
        self.channel = channel
        self.relay = relay
        self.handlerBox = handlerBox
    }

    func write(_ buffer: ByteBuffer) {
        pending.append(buffer)
    }

    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []  // the batch takes the storage; an idle connection keeps none
        let channel = self.channel
        let coreLoop = handler.core.eventLoop
        let boundHandler = NIOLoopBound(handler, eventLoop: coreLoop)
        let relay = self.relay
        channel.eventLoop.execute {
            var batch = batch
            if batch.count == 1, let relay {
                switch relay.value.writeDirectly(&batch[0]) {
                case .written:
                    coreLoop.execute { boundHandler.value.outputWritten(bytes) }
                    return
                case .leftover:
                    channel.writeAndFlush(batch[0]).whenComplete { _ in
                        relay.value.directWriteLeftoverWritten()
                        coreLoop.execute { boundHandler.value.outputWritten(bytes) }
                    }
                    return
                case .declined:
                    break
                }
            }
            let promise = channel.eventLoop.makePromise(of: Void.self)
            for buffer in batch.dropLast() {
                channel.write(buffer, promise: nil)
            }
            if let last = batch.last {
                channel.write(last, promise: promise)
            }
            channel.flush()
            promise.futureResult.whenComplete { _ in
                coreLoop.execute { boundHandler.value.outputWritten(bytes) }
            }
        }
    }

    /// Closes the socket (queued behind the last flushed batch).
    func close() {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.close(promise: nil)
        }
    }

    func setReadingPausedByCore(_ paused: Bool) {
        guard let relay else { return }
        relay.eventLoop.execute {
            relay.value.setReadingPausedByCore(paused)
        }
    }

    /// Asks the socket's loop to stop reading and duplicate `descriptor` for parking; the handler hears back through
    /// ``BrokerConnectionHandler/parkPrepared(duplicate:)`` after every read batch the relay sent before.
    func prepareToPark(descriptor: CInt, handler: BrokerConnectionHandler) {
        guard let relay else { return }
        let boundHandler = NIOLoopBound(handler, eventLoop: handler.core.eventLoop)
        relay.eventLoop.execute {
            let duplicate = relay.value.stopReadingForPark(descriptor: descriptor)
            boundHandler.eventLoop.execute {
                boundHandler.value.parkPrepared(duplicate: duplicate)
            }
        }
    }

    /// Parking was called off: read again.
    func parkCalledOff() {
        guard let relay else { return }
        relay.eventLoop.execute {
            relay.value.parkCalledOff()
        }
    }
}
