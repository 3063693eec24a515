import LiveTestSupport
import MQTTCore
import MQTTLoadGen
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs the generator against a real mosquitto started per test.
@Suite("Load generator against mosquitto", .timeLimit(.minutes(1)))
struct LoadGeneratorTests {
    /// Runs `config`, adjusted by `configure`, against a mosquitto started for it (port already set).
    private func runAgainstMosquitto(
        _ config: LoadGenConfig, _ configure: (inout LoadGenConfig, RunningBroker) -> Void = { _, _ in }
    ) async throws -> LoadGenResult {
        try await MosquittoFixture.with { broker in
            var config = config
            config.port = broker.port
            configure(&config, broker)
            return try await LoadGenerator.run(config)
        }
    }

    static let cases: [(LoadScenario, QoS)] = [LoadScenario.fanout, .fanin, .pairs].flatMap { scenario in
        QoS.allCases.map { (scenario, $0) }
    }

    @Test("every message is delivered exactly once", arguments: cases)
    func deliversEverything(scenario: LoadScenario, qos: QoS) async throws {
        let result = try await runAgainstMosquitto(LoadGenConfig(scenario: scenario, qos: qos)) { config, _ in
            (config.publishers, config.subscribers) =
                switch scenario {
                case .fanout: (1, 3)
                case .fanin: (3, 1)
                case .pairs, .idle: (3, 3)
                }
            config.messagesPerPublisher = 300
            config.inflight = 20
            config.publishTimeout = 15
        }
        let perMessage = scenario == .pairs ? 1 : (scenario == .fanout ? 3 : 1)
        #expect(result.published == 900 / (scenario == .fanout ? 3 : 1))
        #expect(result.acknowledged == result.published)
        #expect(result.expectedDeliveries == result.published * perMessage)
        #expect(result.delivered == result.expectedDeliveries)
        #expect(result.lost == 0)
        #expect(result.duplicates == 0)
        #expect(result.outOfOrder == 0)
        #expect(!result.timedOut)
        #expect(result.deliveredPerSecond > 0)
    }

    @Test(
        "fixed-rate mode reports ordered latency percentiles for every delivered message",
        arguments: LoadGenConfig.Pacing.allCases)
    func latency(pacing: LoadGenConfig.Pacing) async throws {
        let result = try await runAgainstMosquitto(LoadGenConfig(scenario: .fanout, qos: .atLeastOnce)) { config, _ in
            config.publishers = 2
            config.subscribers = 2
            config.messagesPerPublisher = 100
            config.rate = 2_000
            config.pacing = pacing
        }
        let latency = try #require(result.latency)
        #expect(result.pacing == pacing)
        #expect(result.published == 200)
        #expect(latency.count == 400)
        #expect(result.lost == 0)
        #expect(latency.p50Micros > 0)
        #expect(latency.p50Micros <= latency.p99Micros)
        #expect(latency.p99Micros <= latency.maxMicros)
        // 200 messages at 2,000/s take about 0.1 s; unpaced they would take a few milliseconds.
        #expect(result.publishSeconds >= 0.08)
    }

    @Test("duration mode publishes until the deadline and still loses nothing at QoS 2")
    func durationMode() async throws {
        let result = try await runAgainstMosquitto(LoadGenConfig(scenario: .pairs, qos: .exactlyOnce)) { config, _ in
            config.publishers = 2
            config.subscribers = 2
            config.duration = 0.3
        }
        #expect(result.published > 0)
        #expect(result.delivered == result.published)
        #expect(result.lost == 0)
        #expect(result.publishSeconds >= 0.25)
    }

    @Test("with the broker's pid a run reports the broker's CPU time and system calls per message")
    func brokerUsage() async throws {
        let config = LoadGenConfig(scenario: .pairs, qos: .exactlyOnce)
        let result = try await runAgainstMosquitto(config) { config, broker in
            config.publishers = 2
            config.subscribers = 2
            config.messagesPerPublisher = 500
            config.brokerPID = broker.processIdentifier
        }
        let usage = try #require(result.brokerUsage)
        #expect(result.delivered == 1_000)
        #expect(usage.wallSeconds > 0)
        #expect(usage.cpuMicrosPerDelivery != nil)
        // At QoS 2 mosquitto reads and writes at least once for every few of the 4 packets each way per message.
        #expect((usage.readSyscalls ?? 0) >= 500)
        #expect((usage.writeSyscalls ?? 0) >= 500)
        let perMessage = try #require(usage.syscallsPerDelivery)
        #expect(perMessage >= 1 && perMessage < 100)
        // The generator measures itself on every run: it wrote and read every one of those messages too.
        let generator = try #require(result.generatorUsage)
        #expect((generator.writeSyscalls ?? 0) >= 500)
    }

    @Test("idle mode opens 50 connections and reads the broker's memory")
    func idleConnections() async throws {
        let result = try await runAgainstMosquitto(LoadGenConfig(scenario: .idle)) { config, broker in
            config.connections = 50
            config.connectConcurrency = 16
            config.brokerPID = broker.processIdentifier
        }
        let idle = try #require(result.idle)
        #expect(idle.connections == 50)
        #expect(idle.connectsPerSecond > 0)
        #expect(idle.brokerRSSBeforeKiB != nil)
        #expect(idle.brokerRSSAfterKiB != nil)
        #expect(idle.brokerBytesPerConnection != nil)
    }

    @Test("a broker that is not there is a typed error, quickly")
    func noBroker() async throws {
        var config = LoadGenConfig(scenario: .fanout)
        let (held, port) = try refusingPort()
        defer { close(held) }
        config.port = port
        config.connectTimeout = 2
        await #expect(throws: LoadGenError.self) { try await LoadGenerator.run(config) }
    }
}
