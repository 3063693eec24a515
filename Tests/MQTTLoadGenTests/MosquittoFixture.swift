import LiveTestSupport

/// A real mosquitto with the limits the load generator expects (`max_inflight_messages 20`, a deep queue,
/// `TCP_NODELAY`), always stopped by ``with(_:)``.
enum MosquittoFixture {
    /// The configuration lines `scripts/bench-broker.sh` gives mosquitto too.
    static let configurationLines = ["max_inflight_messages 20", "max_queued_messages 100000", "set_tcp_nodelay true"]

    /// Starts mosquitto, runs `body` with it, and stops it whatever `body` does.
    static func with<T>(_ body: (RunningBroker) async throws -> T) async throws -> T {
        try await withBroker(.mosquitto, options: BrokerOptions(mosquittoLines: configurationLines), body)
    }
}
