import LiveTestSupport
import MQTTBroker
import MQTTCore
import MQTTLoadGen
import Testing

/// `--transport ws` against our broker in-process with a `protocol websockets` listener: the generator's
/// connections upgrade, then speak MQTT in masked binary frames.
@Suite("Load generator over WebSockets", .timeLimit(.minutes(1)))
struct WebSocketTransportTests {
    /// Runs `configure`d `config` against our broker with one listener of `transportProtocol`, always shut down.
    private func run(
        _ config: LoadGenConfig, listener transportProtocol: BrokerConfiguration.ListenerProtocol,
        _ configure: (inout LoadGenConfig) -> Void = { _ in }
    ) async throws -> LoadGenResult {
        try await withInProcessBroker({ configuration in
            configuration.listeners = [.init(host: "127.0.0.1", port: 0, transportProtocol: transportProtocol)]
        }) { _, address in
            var config = config
            config.port = try #require(address.port)
            configure(&config)
            return try await LoadGenerator.run(config)
        }
    }

    @Test("a fan-out at QoS 1 over WebSockets loses nothing", arguments: [LoadScenario.fanout, .pairs])
    func fanOutOverWebSockets(scenario: LoadScenario) async throws {
        var config = LoadGenConfig(scenario: scenario, qos: .atLeastOnce)
        config.transport = .ws
        let result = try await run(config, listener: .websockets) { config in
            (config.publishers, config.subscribers) = scenario == .fanout ? (1, 3) : (3, 3)
            config.messagesPerPublisher = 300
            config.publishTimeout = 15
        }
        #expect(result.published == (scenario == .fanout ? 300 : 900))
        #expect(result.acknowledged == result.published)
        #expect(result.expectedDeliveries == 900)
        #expect(result.delivered == result.expectedDeliveries)
        #expect(result.lost == 0)
        #expect(result.duplicates == 0)
        #expect(result.outOfOrder == 0)
        #expect(!result.timedOut)
    }

    @Test("a payload larger than NIOWebSocket's default frame limit arrives whole")
    func largePayload() async throws {
        var config = LoadGenConfig(scenario: .fanout, qos: .atLeastOnce)
        config.transport = .ws
        let result = try await run(config, listener: .websockets) { config in
            (config.publishers, config.subscribers) = (1, 2)
            config.messagesPerPublisher = 20
            config.payloadSize = 100_000
        }
        #expect(result.delivered == 40)
        #expect(result.lost == 0)
    }

    @Test("idle connections over WebSockets open and stay open")
    func idleOverWebSockets() async throws {
        var config = LoadGenConfig(scenario: .idle)
        config.transport = .ws
        let result = try await run(config, listener: .websockets) { config in
            config.connections = 20
            config.connectConcurrency = 8
        }
        #expect(result.idle?.connections == 20)
    }

    @Test("a WebSocket upgrade sent to a plain MQTT listener is a typed error, quickly")
    func upgradeRefused() async throws {
        var config = LoadGenConfig(scenario: .fanout)
        config.transport = .ws
        config.connectTimeout = 3
        // One connection is enough: the broker logs each one's "GET" as a malformed packet (0x47).
        config.subscribers = 1
        await #expect(throws: LoadGenError.self) {
            _ = try await run(config, listener: .mqtt)
        }
    }

    @Test("a WebSocket path that is not a path is rejected before connecting")
    func invalidPath() throws {
        var config = LoadGenConfig(scenario: .fanout)
        config.transport = .ws
        config.webSocketPath = "mqtt"
        #expect(throws: LoadGenError.self) { try config.validated() }
    }
}
