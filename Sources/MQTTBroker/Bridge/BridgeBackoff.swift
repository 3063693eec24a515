import MQTTCore
import NIOCore

/// Reconnect delays of a bridge (`restart_timeout`): constant, mosquitto's decorrelated jitter between a base and
/// a cap, or (the default) our client's doubling with ±20 % jitter; the jitter keeps bridges of many brokers to
/// one remote from coming back in step. A value type with its own seeded generator: tests are deterministic.
struct BridgeBackoff {
    static let jitterFraction = 0.2

    let policy: BridgeConfiguration.RestartTimeout
    /// Failed attempts since the last successful connection.
    private(set) var attempts = 0
    private var random: SplitMix64
    /// The last delay in seconds (decorrelated jitter draws the next one from it).
    private var previous: Double = 0

    init(_ policy: BridgeConfiguration.RestartTimeout, seed: UInt64) {
        self.policy = policy
        self.random = SplitMix64(seed: seed)
    }

    /// The delay before the next attempt.
    mutating func next() -> TimeAmount {
        attempts += 1
        switch policy {
        case .constant(let seconds):
            return .seconds(Int64(seconds))
        case .backoff(let base, let cap):
            let low = Double(base)
            let high = max(low, (attempts == 1 ? low : previous) * 3)
            previous = min(Double(cap), low + (high - low) * unit())
            return Self.seconds(previous)
        case .doubling(let initial, let maximum):
            var delay = initial
            var step = 1
            while step < attempts && delay < maximum {
                delay *= 2
                step += 1
            }
            let scale = 1 - Self.jitterFraction + 2 * Self.jitterFraction * unit()
            return Self.seconds(Double(min(delay, maximum)) * scale)
        }
    }

    /// A connection succeeded: the next delay is the base again.
    mutating func reset() {
        attempts = 0
        previous = 0
    }

    /// Uniform in [0, 1).
    private mutating func unit() -> Double {
        Double(random.next() >> 11) / Double(UInt64(1) << 53)
    }

    private static func seconds(_ value: Double) -> TimeAmount {
        .nanoseconds(Int64(value * 1_000_000_000))
    }
}
