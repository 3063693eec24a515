/// Latency distribution of delivered messages, from the send time stamped in the payload to reception.
public struct LatencySummary: Sendable, Hashable, Codable {
    /// Number of latency samples (one per delivery).
    public var count: Int
    /// Median, microseconds.
    public var p50Micros: Double
    /// 90th percentile, microseconds.
    public var p90Micros: Double
    /// 99th percentile, microseconds.
    public var p99Micros: Double
    /// 99.9th percentile, microseconds: the tail a chat user notices as a stutter.
    public var p999Micros: Double
    /// Maximum, microseconds.
    public var maxMicros: Double
    /// Mean, microseconds.
    public var meanMicros: Double

    /// Summarises nanosecond samples with nearest-rank percentiles; nil for no samples.
    public init?(nanoseconds samples: [UInt64]) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        func rank(_ fraction: Double) -> Double {
            let index = min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
            return Double(sorted[index]) / 1_000
        }
        count = sorted.count
        p50Micros = rank(0.50)
        p90Micros = rank(0.90)
        p99Micros = rank(0.99)
        p999Micros = rank(0.999)
        maxMicros = Double(sorted[sorted.count - 1]) / 1_000
        meanMicros = sorted.reduce(0.0) { $0 + Double($1) } / Double(sorted.count) / 1_000
    }
}
