import NIOCore

/// Bounds the output of one connection that the client does not read (a slow consumer).
///
/// The broker core counts the bytes it hands to the socket (``handed(_:now:)``) and the socket's event loop
/// reports, once per flushed batch, how many of them reached the kernel (``written(_:now:)``); the difference is
/// what waits in memory (the relay's batch and NIO's outbound buffer). Policy (`max_pending_output_bytes`,
/// `slow_consumer_timeout`):
/// - above ``limit`` pending bytes the output is *blocked*: QoS 0 messages for the connection are dropped
///   (counted), QoS 1/2 messages stay in its session queue (bounded by `max_queued_messages`/`max_queued_bytes`);
/// - once pending bytes fall to half the limit the output is unblocked and the queue drains again;
/// - a connection whose output stays blocked for ``timeout``, or whose pending bytes pass the hard bound while
///   blocked (replies to its own packets keep coming), is closed; its persistent session keeps its queue. The hard
///   bound is twice the limit, or the pending bytes at the moment it blocked plus the limit when one large message
///   blocked it. Deliveries written while blocked (``handedDelivery(_:now:)``: messages already in flight when a
///   drain or a resume crossed the limit) count as pending but never close the connection: the inflight window
///   bounds them, and they hold no memory beyond the inflight messages' own.
///
/// A write made while not blocked is never refused, so one message larger than the limit still goes out.
/// Pure value type; the time is passed in, so tests never sleep.
struct PendingOutputGate: Sendable, Hashable {
    /// What the connection must do after an event.
    enum Action: Sendable, Hashable {
        /// Nothing changes.
        case none
        /// The output just became blocked: stop writing messages, close at this deadline unless unblocked first.
        case block(closeAt: NIODeadline?)
        /// The output drained: write queued messages again.
        case unblock
        /// The client does not read: close the connection.
        case close
    }

    /// Pending bytes above which the output is blocked; 0 disables the gate.
    let limit: Int
    /// How long the output may stay blocked before the connection is closed; nil never closes for time.
    let timeout: TimeAmount?

    /// Bytes handed to the socket and not yet reported written.
    private(set) var pendingBytes = 0
    /// When the output became blocked; nil while it is not.
    private(set) var blockedSince: NIODeadline?
    /// Whether ``Action/close`` was returned already (it is returned once).
    private(set) var isClosing = false

    init(limit: Int, timeout: TimeAmount?) {
        self.limit = max(0, limit)
        self.timeout = timeout
    }

    /// Whether messages for the connection are held back.
    var isBlocked: Bool { blockedSince != nil }

    /// Pending bytes when the output became blocked.
    private var pendingWhenBlocked = 0

    /// The pending bytes above which a blocked connection is closed at once.
    var hardLimit: Int {
        let twice = limit.multipliedReportingOverflow(by: 2)
        let grown = pendingWhenBlocked.addingReportingOverflow(limit)
        return max(twice.overflow ? Int.max : twice.partialValue, grown.overflow ? Int.max : grown.partialValue)
    }

    /// `bytes` of a reply or control packet were handed to the socket at `now` (read only when the output becomes
    /// blocked).
    mutating func handed(_ bytes: Int, now: @autoclosure () -> NIODeadline) -> Action {
        handed(bytes, now: now(), mayClose: true)
    }

    /// `bytes` of a PUBLISH delivery were handed to the socket at `now`: they block the output like any write, but
    /// a delivery written while blocked is one the session had already put in flight, so it never closes.
    mutating func handedDelivery(_ bytes: Int, now: @autoclosure () -> NIODeadline) -> Action {
        handed(bytes, now: now(), mayClose: false)
    }

    private mutating func handed(_ bytes: Int, now: @autoclosure () -> NIODeadline, mayClose: Bool) -> Action {
        pendingBytes += bytes
        guard limit > 0 else { return .none }
        if isBlocked {
            guard mayClose, !isClosing, pendingBytes > hardLimit else { return .none }
            isClosing = true
            return .close
        }
        guard pendingBytes > limit else { return .none }
        let blockedAt = now()
        blockedSince = blockedAt
        pendingWhenBlocked = pendingBytes
        return .block(closeAt: timeout.map { blockedAt + $0 })
    }

    /// The socket's loop reports that `bytes` were written (or discarded with a closed socket).
    mutating func written(_ bytes: Int) -> Action {
        pendingBytes = max(0, pendingBytes - bytes)
        guard isBlocked, pendingBytes <= limit / 2 else { return .none }
        blockedSince = nil
        return .unblock
    }

    /// The close timer armed by ``Action/block(closeAt:)`` fired at `now`: whether to close.
    func timerFired(now: NIODeadline) -> Bool {
        guard let blockedSince, let timeout else { return false }
        return now >= blockedSince + timeout
    }
}
