import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The metrics listener of a real broker, scraped over HTTP while MQTT clients publish through it.
@Suite("Prometheus metrics listener", .timeLimit(.minutes(1)))
struct MetricsLiveTests {
    /// A metrics listener on 127.0.0.1 at a port the kernel picks.
    private static func withMetrics(_ configuration: inout BrokerConfiguration) {
        configuration.metricsListener = .init(host: "127.0.0.1", port: 0)
    }

    /// The port the broker's metrics listener is bound to.
    private static func metricsPort(of server: MQTTBrokerServer) throws -> Int {
        try #require(server.metricsAddress?.port)
    }

    /// Scrapes `/metrics` and checks the response is a Prometheus text exposition.
    private static func scrape(_ server: MQTTBrokerServer) async throws -> ScrapedHTTPResponse {
        let response = try await httpRequest("GET", "/metrics", port: try metricsPort(of: server))
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        return response
    }

    /// One subscriber, one publisher, `count` QoS 0 messages from one to the other and one retained message.
    private static func exchange(_ count: Int, at address: SocketAddress) async throws {
        let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "metrics-sub"))
        _ = try await subscriber.subscribe("metrics/#", qos: .atMostOnce)
        let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "metrics-pub"))
        for index in 0..<count {
            try await publisher.send(.publish(PublishPacket(topic: "metrics/\(index)", payload: ByteBuffer(string: "m\(index)"))))
            _ = try await subscriber.nextPublish()
        }
        try await publisher.send(.publish(PublishPacket(topic: "retained/x", payload: ByteBuffer(string: "kept"), retain: true)))
        // A PINGREQ after the retained PUBLISH: its PINGRESP means the PUBLISH was handled.
        try await publisher.send(.pingreq(PingReqPacket()))
        #expect(try await publisher.next() == .pingresp(PingRespPacket()))
    }

    /// Who accepts the plain-TCP sockets, and so counts them: the broker's own socket watcher (one loop, or
    /// parking on), or a SwiftNIO server channel (more loops and parking off).
    enum Acceptor: CaseIterable, Sendable {
        case socketWatcher, swiftNIO
    }

    @Test("the scrape has every counter with $SYS's values and a # TYPE line each", arguments: Acceptor.allCases)
    func countersMatchStatistics(acceptor: Acceptor) async throws {
        try await withLiveBroker(loops: acceptor == .swiftNIO ? 2 : 1, {
            Self.withMetrics(&$0)
            if acceptor == .swiftNIO { $0.parkIdleConnectionsAfter = nil }
        }) { server, address in
            // Each listener's series is there from the start, whoever accepts its sockets.
            let listener = try #require(address.port)
            let connections = #"mqttchat_connections_total{listener="127.0.0.1:\#(listener)"}"#
            #expect(try await Self.scrape(server).samples[connections] == 0)
            try await Self.exchange(5, at: address)
            let response = try await Self.scrape(server)
            let samples = response.samples
            let stats = try #require(try await server.withCore { $0.statistics })

            // The clients' packets: 2 CONNECT, SUBSCRIBE, 5 + 1 PUBLISH, PINGREQ; the broker's: 2 CONNACK,
            // SUBACK, 5 PUBLISH, PINGRESP.
            #expect(samples["mqttchat_messages_received_total"] == 10)
            #expect(samples["mqttchat_messages_sent_total"] == 9)
            #expect(samples["mqttchat_publish_messages_received_total"] == 6)
            #expect(samples["mqttchat_publish_messages_sent_total"] == 5)
            #expect(samples["mqttchat_messages_received_total"] == Double(stats.messagesReceived))
            #expect(samples["mqttchat_messages_sent_total"] == Double(stats.messagesSent))
            #expect(samples["mqttchat_bytes_received_total"] == Double(stats.bytesReceived))
            #expect(samples["mqttchat_bytes_sent_total"] == Double(stats.bytesSent))
            #expect(stats.bytesReceived > 0 && stats.bytesSent > 0)
            #expect(samples[#"mqttchat_messages_dropped_total{reason="queue_full"}"#] == 0)
            #expect(samples[#"mqttchat_messages_dropped_total{reason="slow_consumer"}"#] == 0)
            #expect(samples["mqttchat_slow_consumer_disconnects_total"] == 0)
            #expect(samples["mqttchat_clients_connected"] == 2)
            #expect(samples["mqttchat_clients_maximum"] == 2)
            #expect(samples["mqttchat_sessions"] == 2)
            #expect(samples["mqttchat_subscriptions"] == 1)
            #expect(samples["mqttchat_retained_messages"] == 1)
            #expect(samples[connections] == 2)
            #expect(samples["mqttchat_persistence_sync_seconds_count"] == 0)  // persistence is off

            let types = response.types
            for counter in [
                "mqttchat_messages_received_total", "mqttchat_messages_sent_total", "mqttchat_publish_messages_received_total",
                "mqttchat_publish_messages_sent_total", "mqttchat_messages_dropped_total", "mqttchat_slow_consumer_disconnects_total",
                "mqttchat_bytes_received_total", "mqttchat_bytes_sent_total", "mqttchat_connections_total",
            ] {
                #expect(types[counter] == "counter", "\(counter)")
            }
            for gauge in [
                "mqttchat_clients_connected", "mqttchat_clients_maximum", "mqttchat_sessions", "mqttchat_subscriptions",
                "mqttchat_retained_messages",
            ] {
                #expect(types[gauge] == "gauge", "\(gauge)")
            }
            #expect(types["mqttchat_persistence_sync_seconds"] == "histogram")
        }
    }

    @Test("counters keep growing from scrape to scrape; gauges follow the clients down")
    func countersGrowAcrossScrapes() async throws {
        try await withLiveBroker(Self.withMetrics) { server, address in
            try await Self.exchange(3, at: address)
            let first = try await Self.scrape(server).samples
            let (late, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "metrics-late"))
            try await late.send(.publish(PublishPacket(topic: "metrics/late", payload: ByteBuffer(string: "x"))))
            try await late.send(.pingreq(PingReqPacket()))
            _ = try await late.next()
            await late.close()
            #expect(try await poll(every: .milliseconds(20), for: .seconds(5)) {
                try await server.withCore { $0.connectedClientCount } == 2
            })
            let second = try await Self.scrape(server).samples
            let received = try #require(first["mqttchat_messages_received_total"])
            #expect(second["mqttchat_messages_received_total"] == received + 3)  // CONNECT, PUBLISH, PINGREQ
            #expect(second["mqttchat_publish_messages_received_total"] == (first["mqttchat_publish_messages_received_total"] ?? 0) + 1)
            #expect(second["mqttchat_clients_connected"] == 2)
            #expect(second["mqttchat_clients_maximum"] == 3)
            let listener = try #require(address.port)
            #expect(second[#"mqttchat_connections_total{listener="127.0.0.1:\#(listener)"}"#] == 3)
        }
    }

    @Test("other paths get 404, other methods on /metrics 405")
    func httpErrors() async throws {
        try await withLiveBroker(Self.withMetrics) { server, _ in
            let port = try Self.metricsPort(of: server)
            #expect(try await httpRequest("GET", "/", port: port).status == 404)
            #expect(try await httpRequest("GET", "/metricsx", port: port).status == 404)
            let post = try await httpRequest("POST", "/metrics", port: port)
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET")
            #expect(try await httpRequest("DELETE", "/metrics", port: port).status == 405)
            #expect(try await httpRequest("GET", "/metrics?name[]=x", port: port).status == 200)
        }
    }

    @Test("no metrics listener unless configured")
    func offByDefault() async throws {
        try await withLiveBroker { server, _ in
            #expect(server.metricsAddress == nil)
        }
    }

    @Test("a metrics port in use stops the broker at start, like any listener")
    func bindFailureStopsStart() async throws {
        let (descriptor, port) = try listeningSocket()
        defer { close(descriptor) }
        let server = MQTTBrokerServer(
            configuration: loopbackBrokerConfiguration {
                $0.sysInterval = nil
                $0.metricsListener = .init(host: "127.0.0.1", port: port)
            }, logger: brokerTestLogger)
        await #expect(throws: MetricsListenerError.self) { try await server.start() }
        await server.shutdown()
    }

    @Test("the persistence writer's syncs land in the sync histogram")
    func persistenceSyncHistogram() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqttchat-metrics-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withLiveBroker({
            Self.withMetrics(&$0)
            $0.eventLoopCount = 1
            $0.persistence = PersistenceConfiguration(directory: directory)
        }) { server, address in
            // Recovery ends with a fresh snapshot: synced file and directory, before the listeners bind.
            let before = try await Self.scrape(server).samples
            let startupSyncs = try #require(before["mqttchat_persistence_sync_seconds_count"])
            #expect(startupSyncs >= 2)
            #expect(before[#"mqttchat_persistence_sync_seconds_bucket{le="+Inf"}"#] == startupSyncs)

            // A retained message is logged, and acknowledged once its log record is synced.
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "metrics-durable"))
            try await publisher.send(
                .publish(PublishPacket(topic: "durable/x", payload: ByteBuffer(string: "d"), qos: .atLeastOnce, retain: true, packetID: 1)))
            #expect(try await publisher.next() == .puback(PubAckPacket(packetID: 1)))
            let after = try await Self.scrape(server).samples
            #expect((after["mqttchat_persistence_sync_seconds_count"] ?? 0) > startupSyncs)
            #expect((after["mqttchat_persistence_sync_seconds_sum"] ?? 0) > 0)
            await publisher.close()
        }
    }
}
