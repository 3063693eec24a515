/// How an MQTT 5 request ends: the response message, or why there is none.
typealias RequestOutcome = Result<MQTTMessage, MQTTClientError>

/// The continuation a `request` caller waits on.
typealias RequestWaiter = CheckedContinuation<RequestOutcome, Never>

/// The outstanding MQTT 5 requests of one client, as a value type (tests use plain integers as waiters).
///
/// A request is reserved first (which enforces the limit and hands out a fresh correlation id), then published,
/// and only then does its caller wait. The outcome (response, timeout or publish failure) may arrive at any point
/// after the reservation: an outcome without a waiter is stored and handed over when the caller starts waiting.
/// The first outcome wins; later ones for the same correlation id are dropped. An entry is removed once its
/// outcome reached its waiter.
struct RequestTracker<Waiter: Sendable>: Sendable {
    /// What ``resolve(_:with:)`` found.
    enum Resolution: Sendable {
        /// The caller waits: resume it with the outcome.
        case resume(Waiter)
        /// A request of ours, kept for its caller or already answered: nothing more to do.
        case stored
        /// Not an outstanding request (a late response after a timeout, or someone else's).
        case unknown
    }

    private struct Entry: Sendable {
        var waiter: Waiter?
        var outcome: RequestOutcome?
    }

    /// How many requests may be outstanding at once.
    let limit: Int
    /// Random per client, so that responses meant for an earlier client with the same inbox do not match.
    private let prefix: [UInt8]
    private var counter: UInt64 = 0
    private var entries: [[UInt8]: Entry] = [:]

    init(limit: Int, prefix: [UInt8] = (0..<8).map { _ in UInt8.random(in: 0...255) }) {
        self.limit = limit
        self.prefix = prefix
    }

    /// Number of requests reserved and not yet handed their outcome.
    var outstanding: Int { entries.count }

    /// Reserves a request: its correlation data, or ``MQTTClientError/tooManyOutstandingRequests(limit:)``.
    mutating func reserve() -> Result<[UInt8], MQTTClientError> {
        guard entries.count < limit else { return .failure(.tooManyOutstandingRequests(limit: limit)) }
        counter += 1
        let correlation = prefix + withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        entries[correlation] = Entry()
        return .success(correlation)
    }

    /// The caller starts waiting: returns the outcome at once if it is known (the entry is then removed), else
    /// keeps the waiter. A request that is gone (``failAll()`` ran) fails with `notConnected`.
    mutating func wait(_ correlation: [UInt8], waiter: Waiter) -> RequestOutcome? {
        guard var entry = entries[correlation] else { return .failure(.notConnected) }
        if let outcome = entry.outcome {
            entries[correlation] = nil
            return outcome
        }
        entry.waiter = waiter
        entries[correlation] = entry
        return nil
    }

    /// An outcome for `correlation` arrived (response, timeout or publish failure).
    mutating func resolve(_ correlation: [UInt8], with outcome: RequestOutcome) -> Resolution {
        guard var entry = entries[correlation] else { return .unknown }
        if let waiter = entry.waiter {
            entries[correlation] = nil
            return .resume(waiter)
        }
        if entry.outcome == nil {
            entry.outcome = outcome
            entries[correlation] = entry
        }
        return .stored
    }

    /// Forgets every request (the client shuts down) and returns the waiters to fail.
    mutating func failAll() -> [Waiter] {
        let waiters = entries.values.compactMap(\.waiter)
        entries = [:]
        return waiters
    }
}
