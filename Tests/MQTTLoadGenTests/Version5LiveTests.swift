import LiveTestSupport
import MQTTBroker
import MQTTCore
import MQTTLoadGen
import Testing

/// Tiny MQTT 5 runs of the generator against a real mosquitto and against our broker in-process: every message
/// arrives, with and without topic aliases. Every phase is bounded by the generator's own timeouts.
@Suite("Load generator over MQTT 5", .timeLimit(.minutes(1)))
struct Version5LiveTests {
    /// The brokers a run goes against.
    enum Target: String, CaseIterable, CustomTestStringConvertible {
        case mosquitto, ours
        var testDescription: String { rawValue }
    }

    /// A small v5 run: `scenario` at QoS `qos`, 200 messages per publisher.
    private func config(_ scenario: LoadScenario, qos: QoS, topicAlias: Bool) -> LoadGenConfig {
        var config = LoadGenConfig(scenario: scenario, qos: qos)
        config.protocolVersion = .v5
        config.topicAlias = topicAlias
        (config.publishers, config.subscribers) = scenario == .fanout ? (1, 3) : (3, 3)
        config.messagesPerPublisher = 200
        config.publishTimeout = 15
        config.connectTimeout = 5
        return config
    }

    /// Runs `config` against `target`, started for the run and always stopped.
    private func run(_ config: LoadGenConfig, against target: Target) async throws -> LoadGenResult {
        switch target {
        case .mosquitto:
            return try await MosquittoFixture.with { broker in
                var config = config
                config.port = broker.port
                return try await LoadGenerator.run(config)
            }
        case .ours:
            return try await withInProcessBroker { _, address in
                var config = config
                config.port = try #require(address.port)
                return try await LoadGenerator.run(config)
            }
        }
    }

    private func expectEverythingDelivered(_ result: LoadGenResult, published: Int, perMessage: Int) {
        #expect(result.protocolLevel == 5)
        #expect(result.published == published)
        #expect(result.acknowledged == result.published)
        #expect(result.expectedDeliveries == published * perMessage)
        #expect(result.delivered == result.expectedDeliveries)
        #expect(result.lost == 0)
        #expect(result.duplicates == 0)
        #expect(result.outOfOrder == 0)
        #expect(!result.timedOut)
    }

    @Test("a v5 fan-out delivers every message", arguments: Target.allCases, [QoS.atMostOnce, .atLeastOnce, .exactlyOnce])
    func fanOut(target: Target, qos: QoS) async throws {
        let result = try await run(config(.fanout, qos: qos, topicAlias: false), against: target)
        expectEverythingDelivered(result, published: 200, perMessage: 3)
        let size = try #require(result.publishWireSize)
        #expect(size.withAlias == nil)
        #expect(size.sentBytes == size.withTopic * 200)
    }

    @Test("v5 pairs with topic aliases deliver every message and send fewer bytes", arguments: Target.allCases)
    func topicAliases(target: Target) async throws {
        let result = try await run(config(.pairs, qos: .atLeastOnce, topicAlias: true), against: target)
        expectEverythingDelivered(result, published: 600, perMessage: 1)
        let size = try #require(result.publishWireSize)
        let aliased = try #require(size.withAlias)
        #expect(aliased < size.withTopic)
        // Each of the 3 publishers sends one PUBLISH with topic and alias (3 bytes more), then 199 aliased ones.
        #expect(size.sentBytes == 3 * (size.withTopic + 3 + 199 * aliased))
        #expect(result.wireSizeLine?.hasPrefix("bytes on the wire per PUBLISH: \(size.withTopic) (topic alias: \(aliased))")
            == true)
    }

    @Test("topic aliases against a broker that allows none are a clear error")
    func aliasesRefused() async throws {
        let config = config(.fanout, qos: .atLeastOnce, topicAlias: true)
        let error = await #expect(throws: LoadGenError.self) {
            try await withInProcessBroker({ $0.maxTopicAlias = 0 }) { _, address in
                var config = config
                config.port = try #require(address.port)
                return try await LoadGenerator.run(config)
            }
        }
        #expect(error == .topicAliasesUnavailable(maximum: 0))
    }
}
