import Synchronization

/// Counters the connections bump per batch and the progress reporter reads from another thread.
final class LiveCounters: Sendable {
    /// Messages sent by all publishers.
    let sent = Atomic<Int>(0)
    /// PUBLISH packets received by all subscribers.
    let received = Atomic<Int>(0)
    /// Connections that completed CONNACK (idle mode).
    let connected = Atomic<Int>(0)
    /// The first protocol error a connection ran into (a malformed packet, a broker's DISCONNECT): the run reports
    /// it instead of counting what the closed connection misses as lost.
    private let firstFailure = Mutex<LoadGenError?>(nil)

    /// Keeps `error` unless an earlier one was recorded.
    func recordFailure(_ error: any Error) {
        let failure = error as? LoadGenError ?? .connectionFailed("\(error)")
        firstFailure.withLock { if $0 == nil { $0 = failure } }
    }

    /// The first error recorded, if any.
    var failure: LoadGenError? { firstFailure.withLock { $0 } }

    /// A consistent-enough snapshot for a progress line.
    var progress: LoadProgress {
        LoadProgress(
            sent: sent.load(ordering: .relaxed), received: received.load(ordering: .relaxed),
            connected: connected.load(ordering: .relaxed))
    }
}

/// A live progress sample, delivered about once a second during a run.
public struct LoadProgress: Sendable, Hashable {
    /// Messages sent so far.
    public var sent: Int
    /// Deliveries received so far.
    public var received: Int
    /// Connections established so far (idle mode).
    public var connected: Int
}
