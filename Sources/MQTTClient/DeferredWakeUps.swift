/// What libmosquitto's callbacks hand to waiting tasks — completions for callers, messages for streams — held on the
/// network thread and released in batches. Resuming a continuation, or yielding to a stream whose consumer waits,
/// hands a job to the global executor and may wake a pool thread; one read often carries hundreds of
/// acknowledgements or messages. Released together, they wake a thread once rather than once each (a consumer finds
/// the rest buffered when it runs), and the network thread stays on the socket.
///
/// A batch is due when the network thread is about to wait (nothing more to read), when it is `batchLimit` long, or
/// when its oldest entry has waited `delayLimit`, so a busy socket cannot hold a caller or a message back for long.
/// Entries keep their order. The clock is passed in, so tests need not sleep.
struct DeferredWakeUps<Waiter: Sendable>: Sendable {
    enum Entry: Sendable {
        /// Resume a caller.
        case resume(Waiter, Completion)
        /// Yield a message to a stream.
        case deliver(AsyncStream<MQTTMessage>.Continuation, MQTTMessage)
    }

    let batchLimit: Int
    let delayLimit: Duration
    private(set) var entries: [Entry] = []
    private var oldest: ContinuousClock.Instant?

    init(batchLimit: Int = 256, delayLimit: Duration = .milliseconds(1)) {
        self.batchLimit = batchLimit
        self.delayLimit = delayLimit
    }

    var isEmpty: Bool { entries.isEmpty }

    mutating func append(_ entry: Entry, now: @autoclosure () -> ContinuousClock.Instant) {
        if entries.isEmpty { oldest = now() }
        entries.append(entry)
    }

    /// Takes the whole batch if it is due at `now` (always when `idle`: the thread is about to wait).
    mutating func takeIfDue(idle: Bool, now: @autoclosure () -> ContinuousClock.Instant) -> [Entry] {
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

extension DeferredWakeUps.Entry where Waiter == CheckedContinuation<Completion, Never> {
    /// Wakes whoever waits for this entry.
    func perform() {
        switch self {
        case .resume(let waiter, let completion): waiter.resume(returning: completion)
        case .deliver(let continuation, let message): continuation.yield(message)
        }
    }
}
