import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("MQTT 5 bursts of incoming QoS 1/2 messages through a real broker", .timeLimit(.minutes(1)))
struct MQTT5ReceiveBurstTests {
    /// Both brokers may send up to 100 unacknowledged messages to each client.
    static let options = BrokerOptions(
        mosquittoLines: ["max_inflight_messages 100"], mqttchatLines: ["max_inflight_messages 100"])

    @Test(
        "2,000 QoS 2 messages sent at once arrive whole and once, without a reconnect (libmosquitto's Receive Maximum of 20 broke it)",
        arguments: mqtt5BrokerKinds)
    func qos2Burst(kind: TestBrokerKind) async throws {
        try await withBroker(kind, options: Self.options) { broker in
            let subscriber = try await connectedV5Client(broker, "burst-sub")
            let publisher = try await connectedV5Client(broker, "burst-pub") { $0.maxInflightMessages = 100 }
            let states = Collector(subscriber.stateChanges())
            let topic = "burst/\(uniqueID("t"))"
            let received = Collector(subscriber.messages(matching: topic))
            try await subscriber.subscribe(topic, qos: .exactlyOnce)
            let count = 2000
            try await withTimeout(.seconds(30), "publishing the burst") {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<100 {
                        group.addTask {
                            for index in stride(from: worker, to: count, by: 100) {
                                try await publisher.publish(
                                    topic: topic, payload: Array("\(index)".utf8), qos: .exactlyOnce)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let messages = try await received.wait(count: count, timeout: .seconds(20))
            #expect(Set(messages.map(\.payload.text)) == Set((0..<count).map { "\($0)" }))
            try await Task.sleep(for: .milliseconds(300))
            #expect(received.snapshot.count == count, "QoS 2 must not deliver duplicates")
            #expect(states.snapshot == [.connected(sessionPresent: false)], "the subscriber stayed connected")
            await publisher.disconnect()
            await subscriber.disconnect()
        }
    }

    @Test("a Receive Maximum of 0 is refused before connecting")
    func zeroRefused() throws {
        var configuration = MQTTClientConfiguration(clientID: "rm0", port: 1883)
        configuration.protocolVersion = .v5
        configuration.receiveMaximum = 0
        #expect(throws: MQTTClientError.self) { _ = try MQTTClient(configuration: configuration) }
    }
}
