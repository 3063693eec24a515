import EpollEventLoop
import NIOCore

/// When the connections' output leaves: everything one read batch wrote to a connection leaves in one flush (one
/// `writev`), at the end of that batch; writes made outside a read (timers, relayed sockets, other connections
/// closing) leave at the end of the event-loop tick.
///
/// Flushing per read batch rather than once per tick lets subscribers read in parallel with the broker's next
/// batch, and an isolated message does not wait for the rest of the tick. Acknowledgements of a connection's own
/// publishes may wait for the end of the tick, so that the deliveries of every socket ready in this tick leave
/// before any publisher's PUBACK.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class OutputFlusher {
    private let eventLoop: any EventLoop
    /// Connections written to since the last flush.
    @exclusivity(unchecked) private var dirtyConnections: [BrokerConnectionHandler] = []
    /// The list ``flushDirty(deferringAcknowledgements:)`` hands back for the next tick's dirty connections.
    @exclusivity(unchecked) private var spareDirtyConnections: [BrokerConnectionHandler] = []
    /// Whether a flush of the dirty connections is already scheduled for the end of this loop tick.
    @exclusivity(unchecked) private var flushScheduled = false
    /// The end-of-tick flush is made by the loop's iteration-end handler, not a task queued for it
    /// (``flushAtIterationEnd(of:)``).
    @exclusivity(unchecked) private var flushesAtIterationEnd = false
    /// When the read batch of a socket on this loop began: set by its first read, cleared when the batch
    /// completes or the socket closes or fails (both of which flush too). Nil outside a batch.
    @exclusivity(unchecked) private(set) var readBatchStartedAt: NIODeadline?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Whether a socket on this loop is inside a read batch, which ends with a flush: writes made meanwhile need
    /// no end-of-tick flush.
    var isInReadBatch: Bool { readBatchStartedAt != nil }

    /// A socket's read batch begins (its first read).
    @inline(__always)
    func readBatchBegins() {
        if readBatchStartedAt == nil { readBatchStartedAt = eventLoop.now }
    }

    /// The socket's read batch completed, or the socket closed or failed.
    @inline(__always)
    func readBatchEnds() {
        readBatchStartedAt = nil
    }

    /// The time for bookkeeping that needs no finer grain than a read batch (keepalive, back-pressure stalls):
    /// inside a read batch the time it began, otherwise the clock. One clock read per batch instead of one per
    /// acknowledgement or routed message.
    var now: NIODeadline { readBatchStartedAt ?? eventLoop.now }

    /// Runs `decode` (input decoded outside a socket's read, such as a resumed publisher's buffered bytes) as one
    /// read batch, flushed at its end. Inside a read batch already, it simply joins that batch.
    func decodeAsReadBatch(_ decode: () -> Void) {
        guard !isInReadBatch else { return decode() }
        readBatchBegins()
        decode()
        readBatchEnds()
        flushDirty()
    }

    /// Remembers that `connection` has unflushed writes and makes sure they are flushed: at the end of the read
    /// batch in progress, otherwise at the end of the loop tick.
    func markDirty(_ connection: BrokerConnectionHandler) {
        guard !connection.output.isDirty else { return }
        connection.output.isDirty = true
        dirtyConnections.append(connection)
        guard !isInReadBatch else { return }
        scheduleEndOfTickFlush()
    }

    /// Flushes every connection written to since the last call. `deferringAcknowledgements` (at the end of a read
    /// batch) leaves connections that hold nothing but acknowledgements of their own publishes for the end of the
    /// loop tick.
    func flushDirty(deferringAcknowledgements: Bool = false) {
        guard !dirtyConnections.isEmpty else { return }
        // Two arrays take turns, so a flush allocates nothing; a flush nested in another (a write completing
        // inside the outer flush) finds no spare and starts an empty list.
        var pending = spareDirtyConnections
        spareDirtyConnections = []
        swap(&pending, &dirtyConnections)
        var deferred = false
        let now = self.now  // one clock read per flush of the dirty list, not one per connection
        for connection in pending {
            if deferringAcknowledgements && connection.output.holdsOnlyAcknowledgements {
                dirtyConnections.append(connection)
                deferred = true
            } else {
                connection.flushNow(at: now)
            }
        }
        pending.removeAllKeepingStorage()
        spareDirtyConnections = pending
        if deferred { scheduleEndOfTickFlush() }
    }

    private func scheduleEndOfTickFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        guard !flushesAtIterationEnd else { return }  // the loop calls flushIfScheduled() at the end of its iteration
        eventLoop.assumeIsolated().execute { [self] in
            flushIfScheduled()
        }
    }

    private func flushIfScheduled() {
        guard flushScheduled else { return }
        flushScheduled = false
        flushDirty()
    }

    /// Makes the end-of-tick flush on `loop`, the core's own loop, from the loop's iteration-end handler instead of
    /// a queued task (which costs an allocation, two lock round trips and an extra wake-up). Call on `loop` before
    /// serving sockets. The handler holds this flusher until the loop stops.
    func flushAtIterationEnd(of loop: EpollEventLoop) {
        precondition(loop === eventLoop, "the core flushes at the end of its own loop's iterations")
        flushesAtIterationEnd = true
        loop.setIterationEndHandler { [self] in flushIfScheduled() }
    }
}
