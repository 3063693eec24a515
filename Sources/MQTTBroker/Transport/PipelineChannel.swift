import NIOCore

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
final class PipelineChannel: ConnectionTransport {
    let context: ChannelHandlerContext
    /// Writes flushes straight to the socket; nil for a socket the broker did not accept itself (TLS, or parking
    /// turned off).
    @exclusivity(unchecked) private var directWriter: DirectSocketWriter?
    @exclusivity(unchecked) private var held: ByteBuffer?
    /// Whether ``held`` is the handler's own coalescing buffer (a shared payload is never reused).
    @exclusivity(unchecked) private var heldIsOwnBuffer = false

    var remoteAddress: SocketAddress? { context.channel.remoteAddress }
    var socketEventLoop: any EventLoop { context.eventLoop }
    var parkingSupport: ParkingSupport { .immediate(self) }

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

    func close(lingering linger: TimeAmount) {
        if let last = held {
            held = nil
            context.write(NIOAny(last), promise: nil)
        }
        context.flush()
        let context = self.context
        let halfClosed = context.eventLoop.makePromise(of: Void.self)
        context.close(mode: .output, promise: halfClosed)
        // Read on (the connection drops what arrives) until the client closes, or the linger ends.
        halfClosed.futureResult.assumeIsolated().whenComplete { result in
            guard case .success = result else {
                context.close(promise: nil)
                return
            }
            context.read()
            context.eventLoop.assumeIsolated().scheduleTask(in: linger) { context.close(promise: nil) }
        }
    }

    func setReadingPausedByCore(_ paused: Bool) {
        try? context.channel.syncOptions?.setOption(.autoRead, value: !paused)
        if !paused {
            context.read()
        }
    }
}
