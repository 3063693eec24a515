/// Decides whether the loop polls for events for a moment before it sleeps in `epoll_wait`, from the times at
/// which its waits begin and end: the loop reads the clock, tests hand it times.
///
/// A busy loop that sleeps between two closely spaced events pays for going to sleep and for being woken: a
/// context switch each way, and for the peer that wakes it a costlier write (on a virtual machine, an
/// interrupt sent to the sleeping core). The next event also waits for the wake-up. Polling instead
/// (`epoll_wait` with no timeout, repeated for up to ``limit``) costs the CPU it spins, so the loop polls only
/// while both hold:
/// - it is busy: its work took at least half of the last window of about a millisecond (``window``);
/// - events come quickly: its last wait ended within ``limit``.
///
/// A poll that finds nothing within the limit ends in a sleep, as before. That long wait turns polling off until a
/// wait ends within the limit again. An idle or lightly loaded loop therefore sleeps at once, as it would without
/// polling: a failed poll costs at most ``limit`` of CPU, and only after a wait that ended within it.
public struct PollBeforeSleep: Sendable {
    /// The longest a wait polls before it sleeps, in nanoseconds; 0 never polls.
    public let limit: UInt64
    /// The window over which the loop's busy share is measured, in nanoseconds: a window closes at the first
    /// wait that ends a millisecond or more after the window began.
    public static let window: UInt64 = 1_000_000

    private var lastWaitEnd: UInt64
    private var waitBegan: UInt64 = 0
    private var windowBusy: UInt64 = 0
    private var windowIdle: UInt64 = 0
    /// The last closed window's work took at least half of it.
    private var isBusy = false
    /// The last wait ended within the limit.
    private var lastWaitWasShort = false

    /// A policy that polls for up to `limit` nanoseconds; `now` is when the loop starts (its work begins).
    public init(limit: UInt64, now: UInt64) {
        self.limit = limit
        self.lastWaitEnd = now
    }

    /// A wait begins at `now`; `canSleep` is false when it only looks (tasks are queued). Returns until when it
    /// should poll before it sleeps, or nil to sleep at once (or only look).
    public mutating func waitBegins(at now: UInt64, canSleep: Bool = true) -> UInt64? {
        windowBusy &+= now &- lastWaitEnd
        waitBegan = now
        return canSleep && limit > 0 && isBusy && lastWaitWasShort ? now &+ limit : nil
    }

    /// The wait that began last ended at `now`, with events (or a timeout).
    public mutating func waitEnded(at now: UInt64) {
        let waited = now &- waitBegan
        lastWaitWasShort = waited < limit
        windowIdle &+= waited
        lastWaitEnd = now
        let span = windowBusy &+ windowIdle
        guard span >= Self.window else { return }
        isBusy = windowBusy >= span - windowBusy
        windowBusy = 0
        windowIdle = 0
    }
}

/// How often a loop's waits polled before they slept (``EpollEventLoop/pollingCounts``).
public struct PollingCounts: Sendable, Hashable {
    /// Waits that polled.
    public var polledWaits = 0
    /// Polled waits that found events before the limit: waits that needed no sleep.
    public var answeredPolls = 0
}
