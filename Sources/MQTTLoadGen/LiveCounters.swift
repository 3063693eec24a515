import Synchronization

/// Counters the connections bump per batch and the progress reporter reads from another thread.
final class LiveCounters: Sendable {
    /// Messages sent by all publishers.
    let sent = Atomic<Int>(0)
    /// PUBLISH packets received by all subscribers.
    let received = Atomic<Int>(0)
    /// Connections that completed CONNACK (idle mode).
    let connected = Atomic<Int>(0)

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
