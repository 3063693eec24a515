import CoreMetrics
import NIOConcurrencyHelpers
import NIOCore
import Prometheus

/// The broker's Prometheus metrics: swift-metrics handles backed by a ``PrometheusCollectorRegistry`` of this
/// broker's own (not the process-wide `MetricsSystem`, so several brokers in one process, as in the tests, each
/// export their own values).
///
/// Nothing here is on the message path. The per-message counters already exist in ``BrokerStatistics`` (they feed
/// `$SYS` too); a scrape copies them from the core on its event loop (``BrokerMetricsSnapshot``) and ``record(_:)``
/// brings the Prometheus values up to date. Only two things are recorded as they happen, both far from the
/// message path: accepted connections, per listener (``connectionCounter(for:)``), and the persistence writer's
/// syncs, on its own thread (``recordSync(_:)``). The handles are thread-safe, and the registry takes a lock of
/// its own while it renders.
final class BrokerMetrics: Sendable {
    /// Metric names, shared by the code that makes them and by docs/broker.md.
    enum Name {
        static let clientsConnected = "mqttchat_clients_connected"
        static let clientsMaximum = "mqttchat_clients_maximum"
        static let sessions = "mqttchat_sessions"
        static let subscriptions = "mqttchat_subscriptions"
        static let retainedMessages = "mqttchat_retained_messages"
        static let messagesReceived = "mqttchat_messages_received_total"
        static let messagesSent = "mqttchat_messages_sent_total"
        static let publishReceived = "mqttchat_publish_messages_received_total"
        static let publishSent = "mqttchat_publish_messages_sent_total"
        static let messagesDropped = "mqttchat_messages_dropped_total"
        static let slowConsumerDisconnects = "mqttchat_slow_consumer_disconnects_total"
        static let bytesReceived = "mqttchat_bytes_received_total"
        static let bytesSent = "mqttchat_bytes_sent_total"
        static let connections = "mqttchat_connections_total"
        static let persistenceSync = "mqttchat_persistence_sync_seconds"
    }

    /// The upper bounds of the sync histogram's buckets: an `fdatasync` takes from tens of microseconds (an SSD
    /// with a write cache) to tens of milliseconds (a disk that flushes); the default buckets of swift-prometheus,
    /// 5 ms and up, would put every fast disk in the first one.
    static let syncBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
    ]

    /// A counter fed from a snapshot, and what the snapshot says its value is.
    private struct SnapshotCounter: Sendable {
        let counter: CoreMetrics.Counter
        let value: @Sendable (BrokerStatistics) -> UInt64
    }

    /// The registry the values are rendered from; every handle below writes into it.
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let clientsConnected: CoreMetrics.Gauge
    private let clientsMaximum: CoreMetrics.Gauge
    private let sessions: CoreMetrics.Gauge
    private let subscriptions: CoreMetrics.Gauge
    private let retainedMessages: CoreMetrics.Gauge
    private let snapshotCounters: [SnapshotCounter]
    /// The value each of ``snapshotCounters`` was last brought to: a Prometheus counter can only be incremented,
    /// so a snapshot adds its difference to this.
    private let exported: NIOLockedValueBox<[UInt64]>
    private let syncTimer: CoreMetrics.Timer

    init() {
        let registry = PrometheusCollectorRegistry()
        var configured = PrometheusMetricsFactory(registry: registry)
        configured.durationHistogramBuckets[Name.persistenceSync] = Self.syncBuckets
        let factory = configured
        self.registry = registry
        self.factory = factory
        clientsConnected = CoreMetrics.Gauge(label: Name.clientsConnected, factory: factory)
        clientsMaximum = CoreMetrics.Gauge(label: Name.clientsMaximum, factory: factory)
        sessions = CoreMetrics.Gauge(label: Name.sessions, factory: factory)
        subscriptions = CoreMetrics.Gauge(label: Name.subscriptions, factory: factory)
        retainedMessages = CoreMetrics.Gauge(label: Name.retainedMessages, factory: factory)
        func counter(_ name: String, _ dimensions: [(String, String)] = [], _ value: @escaping @Sendable (BrokerStatistics) -> UInt64)
            -> SnapshotCounter
        {
            SnapshotCounter(counter: CoreMetrics.Counter(label: name, dimensions: dimensions, factory: factory), value: value)
        }
        snapshotCounters = [
            counter(Name.messagesReceived) { $0.messagesReceived },
            counter(Name.messagesSent) { $0.messagesSent },
            counter(Name.publishReceived) { $0.publishReceived },
            counter(Name.publishSent) { $0.publishSent },
            // One series per cause; together they are `$SYS/broker/publish/messages/dropped`.
            counter(Name.messagesDropped, [("reason", "queue_full")]) { $0.publishDroppedQueueFull },
            counter(Name.messagesDropped, [("reason", "slow_consumer")]) { $0.publishDroppedSlowConsumer },
            counter(Name.slowConsumerDisconnects) { $0.slowConsumerDisconnects },
            counter(Name.bytesReceived) { $0.bytesReceived },
            counter(Name.bytesSent) { $0.bytesSent },
        ]
        exported = NIOLockedValueBox([UInt64](repeating: 0, count: snapshotCounters.count))
        syncTimer = CoreMetrics.Timer(label: Name.persistenceSync, factory: factory)
    }

    /// Brings every value read from the core up to `snapshot`. Counters only grow: a snapshot older than one
    /// recorded before it (two scrapes crossing) leaves them where they are.
    func record(_ snapshot: BrokerMetricsSnapshot) {
        clientsConnected.record(snapshot.connectedClients)
        clientsMaximum.record(snapshot.statistics.maximumConnected)
        sessions.record(snapshot.sessions)
        subscriptions.record(snapshot.subscriptions)
        retainedMessages.record(snapshot.retainedMessages)
        exported.withLockedValue { exported in
            for (index, entry) in snapshotCounters.enumerated() {
                let value = entry.value(snapshot.statistics)
                guard value > exported[index] else { continue }
                entry.counter.increment(by: Int64(clamping: value - exported[index]))
                exported[index] = value
            }
        }
    }

    /// The counter of connections accepted on the listener bound at `address`, labelled with that address
    /// (`127.0.0.1:1883`, `[::1]:8883`): the configured port may be 0, the bound one is what a client dials.
    func connectionCounter(for address: SocketAddress) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: Name.connections, dimensions: [("listener", Self.label(for: address))], factory: factory)
    }

    /// Records how long one `fsync`/`fdatasync` of the persistence writer took; called on the writer's thread.
    func recordSync(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        syncTimer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The registry's values in the Prometheus text exposition format (version 0.0.4).
    func render(into buffer: inout [UInt8]) {
        registry.emit(into: &buffer)
    }

    /// `HOST:PORT`, with brackets around an IPv6 host.
    static func label(for address: SocketAddress) -> String {
        let host = address.ipAddress ?? "unknown"
        let port = address.port.map(String.init) ?? "0"
        if case .v6 = address { return "[\(host)]:\(port)" }
        return "\(host):\(port)"
    }
}

/// What a scrape reads from the core: a copy, taken on the core's event loop, so the values are rendered off it.
struct BrokerMetricsSnapshot: Sendable {
    var statistics: BrokerStatistics
    var connectedClients: Int
    var sessions: Int
    var subscriptions: Int
    var retainedMessages: Int

    /// Copies the values of `core`; call on its event loop.
    init(of core: BrokerCore) {
        statistics = core.statistics
        connectedClients = core.connectedClientCount
        sessions = core.sessionCount
        subscriptions = core.subscriptionCount
        retainedMessages = core.retainedStore.count
    }
}
