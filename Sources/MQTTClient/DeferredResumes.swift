/// Completions that libmosquitto's callbacks produced on the network thread, held so that callers are resumed in
/// batches: resuming a continuation hands a job to the global executor and may wake a pool thread, and one read often
/// carries hundreds of acknowledgements. Resuming them together wakes a thread once rather than once each, and keeps
/// the network thread on the socket.
///
/// A batch is due when the network thread is about to wait (nothing more to read), when it is `batchLimit` long, or
/// when its oldest entry has waited `delayLimit`, so a busy socket cannot hold a caller back for long. The clock is
/// passed in, so tests need not sleep.
struct DeferredResumes<Waiter: Sendable>: Sendable {
    let batchLimit: Int
    let delayLimit: Duration
    private(set) var entries: [(Waiter, Completion)] = []
    private var oldest: ContinuousClock.Instant?

    init(batchLimit: Int = 256, delayLimit: Duration = .milliseconds(1)) {
        self.batchLimit = batchLimit
        self.delayLimit = delayLimit
    }

    var isEmpty: Bool { entries.isEmpty }

    mutating func append(_ waiter: Waiter, _ completion: Completion, now: @autoclosure () -> ContinuousClock.Instant) {
        if entries.isEmpty { oldest = now() }
        entries.append((waiter, completion))
    }

    /// Takes the whole batch if it is due at `now` (always when `idle`: the thread is about to wait).
    mutating func takeIfDue(idle: Bool, now: @autoclosure () -> ContinuousClock.Instant) -> [(Waiter, Completion)] {
        guard !entries.isEmpty else { return [] }
        guard idle || entries.count >= batchLimit || oldest.map({ $0.duration(to: now()) >= delayLimit }) == true
        else { return [] }
        defer {
            entries.removeAll(keepingCapacity: true)
            oldest = nil
        }
        return entries
    }
}
