import NIOCore

/// The core-loop side of a socket served on another event loop: collects the buffers written during one batch and
/// hands them to the socket's loop with a single `execute` per flush, so the per-message path crosses threads once
/// per batch and takes no lock of ours. Tasks from one loop to another run in order, so writes keep their order.
/// The socket's loop answers with one `execute` per batch once the batch is written.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` property, see ``BrokerCore``).
final class RelayedChannel: ConnectionTransport {
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

    var remoteAddress: SocketAddress? { channel.remoteAddress }
    var socketEventLoop: any EventLoop { channel.eventLoop }
    var parkingSupport: ParkingSupport { .afterStoppingReads(self) }

    /// A relayed buffer is never reused: the socket's loop lets go of it on its own schedule.
    func write(_ buffer: ByteBuffer, ownBuffer: Bool) {
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

    func close(lingering linger: TimeAmount) {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.close(mode: .output).whenComplete { result in
                guard case .success = result else {
                    channel.close(promise: nil)
                    return
                }
                channel.read()
                channel.eventLoop.scheduleTask(in: linger) { channel.close(promise: nil) }
            }
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
