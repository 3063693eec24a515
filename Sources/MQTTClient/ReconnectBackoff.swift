import MQTTCore

/// Computes reconnect delays for a ``ReconnectPolicy``: `initial`, then times `factor` per failed attempt, capped at
/// `maximum`, optionally scattered by ±20 %. A value type with its own seeded generator so tests are deterministic.
struct ReconnectBackoff: Sendable {
    /// The fraction by which jitter may move a delay in either direction.
    static let jitterFraction = 0.2

    let policy: ReconnectPolicy
    /// Attempts made since the last successful connection.
    private(set) var attempts = 0
    private var random: SplitMix64

    init(policy: ReconnectPolicy, seed: UInt64) {
        self.policy = policy
        self.random = SplitMix64(seed: seed)
    }

    /// Whether reconnecting is switched on at all.
    var isEnabled: Bool {
        if case .disabled = policy { return false }
        return true
    }

    /// The next attempt number and its delay, or `nil` when the policy is `.disabled`.
    mutating func next() -> (attempt: Int, delay: Duration)? {
        guard case .exponential(let initial, let factor, let maximum, let jitter) = policy else { return nil }
        attempts += 1
        var base = initial
        var step = 1
        while step < attempts && base < maximum {
            base = base * max(factor, 1)
            step += 1
        }
        if base > maximum { base = maximum }
        guard jitter else { return (attempts, base) }
        let unit = Double(random.next() >> 11) / Double(1 << 53)  // uniform in [0, 1)
        let scale = 1 - Self.jitterFraction + 2 * Self.jitterFraction * unit
        return (attempts, base * scale)
    }

    /// Called after a successful connection: the next delay is `initial` again.
    mutating func reset() {
        attempts = 0
    }
}
