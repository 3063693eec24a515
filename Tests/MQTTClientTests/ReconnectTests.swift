import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("Reconnecting after the broker restarts", .timeLimit(.minutes(1)))
struct ReconnectTests {
    @Test(
        "broker restart: disconnected -> reconnecting -> connected, subscription restored, offline QoS 1 delivered",
        arguments: TestBrokerKind.allCases)
    func brokerRestart(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try await connectedClient(broker, "rc")
            let topic = "rc/\(uniqueID("t"))"
            try await client.subscribe(topic, qos: .atLeastOnce)
            let states = Collector(client.stateChanges())
            let received = Collector(client.messages(matching: topic))

            await broker.stop()
            try await states.wait(timeout: .seconds(5), "reconnecting") { states in
                states.contains { if case .reconnecting = $0 { true } else { false } }
            }
            // Published while the broker is down: queued, sent and acknowledged after the reconnect.
            let offlinePublish = Task {
                try await client.publish(topic: topic, payload: Array("during outage".utf8), qos: .atLeastOnce)
            }
            try await Task.sleep(for: .milliseconds(300))
            try await broker.restart()

            try await withTimeout(.seconds(10), "offline publish acknowledged") { try await offlinePublish.value }
            let history = try await states.wait(timeout: .seconds(10), "connected again") { states in
                states.last == .connected(sessionPresent: false)
            }
            let disconnected = try #require(history.firstIndex { if case .disconnected = $0 { true } else { false } })
            let reconnecting = try #require(history.firstIndex { if case .reconnecting = $0 { true } else { false } })
            let connected = try #require(history.lastIndex(of: .connected(sessionPresent: false)))
            #expect(disconnected < reconnecting && reconnecting < connected, "\(history)")
            #expect(history.first == .connected(sessionPresent: false))

            let offline = try await received.wait(count: 1)
            #expect(offline.first?.payload.text == "during outage")

            // The subscription was restored: another client's message arrives too.
            let other = try await connectedClient(broker, "other")
            try await other.publish(topic: topic, payload: Array("after restart".utf8), qos: .atLeastOnce)
            let all = try await received.wait(count: 2)
            #expect(all.map(\.payload.text).contains("after restart"))
            await other.disconnect()
            await client.disconnect()
        }
    }

    @Test(
        "publishes beyond offlineQueueLimit fail with offlineQueueFull; QoS 0 offline is notConnected",
        arguments: TestBrokerKind.allCases)
    func offlineQueueLimit(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            var configuration = testConfiguration(broker, clientID: uniqueID("oq"))
            configuration.offlineQueueLimit = 2
            configuration.reconnect = .exponential(
                initial: .seconds(30), factor: 2, maximum: .seconds(30), jitter: false)
            let client = try MQTTClient(configuration: configuration)
            try await client.connect()
            let states = Collector(client.stateChanges())
            await broker.stop()
            try await states.wait(timeout: .seconds(5), "reconnecting") { states in
                states.contains { if case .reconnecting = $0 { true } else { false } }
            }
            let queued = (0..<2).map { index in
                Task { try await client.publish(topic: "oq/t", payload: [UInt8(index)], qos: .atLeastOnce) }
            }
            try await Task.sleep(for: .milliseconds(200))
            await #expect(throws: MQTTClientError.offlineQueueFull) {
                try await client.publish(topic: "oq/t", payload: [9], qos: .exactlyOnce)
            }
            await #expect(throws: MQTTClientError.notConnected) {
                try await client.publish(topic: "oq/t", payload: [0], qos: .atMostOnce)
            }
            await client.disconnect()
            for task in queued {
                await #expect(throws: MQTTClientError.notConnected) { try await task.value }
            }
        }
    }

    @Test("with reconnect disabled a lost connection stays disconnected", arguments: TestBrokerKind.allCases)
    func reconnectDisabled(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            var configuration = testConfiguration(broker, clientID: uniqueID("nd"))
            configuration.reconnect = .disabled
            let client = try MQTTClient(configuration: configuration)
            try await client.connect()
            let states = Collector(client.stateChanges())
            await broker.stop()
            try await states.wait(timeout: .seconds(5), "disconnected") { states in
                states.contains { if case .disconnected = $0 { true } else { false } }
            }
            try await broker.restart()
            try await Task.sleep(for: .milliseconds(400))
            #expect(!states.snapshot.contains { if case .reconnecting = $0 { true } else { false } })
            #expect(!states.snapshot.dropFirst().contains(.connected(sessionPresent: false)))
        }
    }
}
