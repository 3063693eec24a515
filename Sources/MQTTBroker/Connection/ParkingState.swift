import NIOCore

/// A connection's bookkeeping for parking (``BrokerConnectionHandler``, `park_idle_connections_after_ms`): when it
/// was last written to, when it may next park, and whether a relayed socket is stopping its reads so that it can.
/// A value type with the time passed in; the connection carries out what it decides.
struct ParkingState {
    /// When output was last flushed to the connection (when the client was last heard from, the state machine
    /// knows already). Stored per flush with the read batch's time, not per message.
    var lastFlushedAt: NIODeadline
    /// Counts the connection's parkings, so that a stale report of the watcher can be told apart.
    private(set) var generation: UInt32 = 0
    /// A relayed socket is stopping its reads so that the connection can park: when the connection last had
    /// traffic at the time that was asked.
    private(set) var requestedAt: NIODeadline?
    /// A connection that could not park (something was in progress) is looked at again no sooner than this.
    private var notBefore = NIODeadline.uptimeNanoseconds(0)

    init(now: NIODeadline) {
        self.lastFlushedAt = now
    }

    /// When the connection last received a packet or had output flushed.
    func lastTraffic(lastHeardAt: NIODeadline?) -> NIODeadline {
        max(lastHeardAt ?? lastFlushedAt, lastFlushedAt)
    }

    /// When to look at the connection for parking next: `delay` after its last traffic, once a relayed park
    /// request is not pending. Nil when the client has not connected yet.
    func checkDeadline(delay: TimeAmount, lastHeardAt: NIODeadline?) -> NIODeadline? {
        guard let lastHeardAt, requestedAt == nil else { return nil }
        return max(max(lastHeardAt, lastFlushedAt) + delay, notBefore)
    }

    /// Looks at the connection again no sooner than `delay` after `now`.
    mutating func postpone(from now: NIODeadline, delay: TimeAmount?) {
        if let delay { notBefore = now + delay }
    }

    /// A relayed socket was asked to stop reading; `lastTraffic` is the connection's at that time.
    mutating func requested(lastTraffic: NIODeadline) {
        requestedAt = lastTraffic
    }

    /// The relayed socket answered: returns when the request was made (nil when none was pending).
    mutating func requestAnswered() -> NIODeadline? {
        requestedAt.take()
    }

    /// The connection parks: the generation its watcher ticket carries.
    mutating func parked() -> UInt32 {
        generation &+= 1
        return generation
    }
}
