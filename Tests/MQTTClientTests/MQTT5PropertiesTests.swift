import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("MQTT 5 publish properties through a real broker", .timeLimit(.minutes(1)))
struct MQTT5PropertiesTests {
    static let sample = MQTTPublishProperties(
        payloadFormat: .utf8, messageExpiryInterval: 300, contentType: "application/json",
        responseTopic: "replies/here", correlationData: [0, 1, 2, 255],
        userProperties: [
            MQTTUserProperty("b", "1"), MQTTUserProperty("a", "2"), MQTTUserProperty("b", "3"),
            MQTTUserProperty("", "empty name"), MQTTUserProperty("ü", "✓"),
        ])

    @Test("every publish property round-trips, user properties in order with repeats", arguments: mqtt5BrokerKinds)
    func roundTrip(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let subscriber = try await connectedV5Client(broker, "psub")
            let publisher = try await connectedV5Client(broker, "ppub")
            let topic = "props/\(uniqueID("t"))"
            let received = Collector(subscriber.messages(matching: topic))
            try await subscriber.subscribe(topic, qos: .atLeastOnce)
            try await publisher.publish(
                topic: topic, payload: Array("{}".utf8), qos: .atLeastOnce, properties: Self.sample)
            try await publisher.publish(topic: topic, payload: Array("plain".utf8), qos: .atLeastOnce)
            let messages = try await received.wait(count: 2)
            let rich = messages[0].properties
            #expect(rich.userProperties == Self.sample.userProperties)
            #expect(rich.payloadFormat == .utf8)
            #expect(rich.contentType == "application/json")
            #expect(rich.responseTopic == "replies/here")
            #expect(rich.correlationData == [0, 1, 2, 255])
            // The broker forwards what is left of the interval: at most what was sent, and not much less.
            #expect((295...300).contains(rich.messageExpiryInterval ?? 0))
            #expect(messages[1].properties.isEmpty)
            #expect(messages[1].payload.text == "plain")
            await subscriber.disconnect()
            await publisher.disconnect()
        }
    }

    @Test("an expired message is not delivered to a session that comes back late", arguments: mqtt5BrokerKinds)
    func messageExpiry(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let id = uniqueID("exp")
            let topic = "exp/\(uniqueID("t"))"
            func sessionClient() throws -> MQTTClient {
                var configuration = v5Configuration(broker, clientID: id)
                configuration.cleanSession = false
                configuration.sessionExpiryInterval = 60
                return try MQTTClient(configuration: configuration)
            }
            let first = try sessionClient()
            try await first.connect()
            try await first.subscribe(topic, qos: .atLeastOnce)
            await first.disconnect()
            let publisher = try await connectedV5Client(broker, "exppub")
            try await publisher.publish(
                topic: topic, payload: Array("short".utf8), qos: .atLeastOnce,
                properties: MQTTPublishProperties(messageExpiryInterval: 1))
            try await publisher.publish(topic: topic, payload: Array("long".utf8), qos: .atLeastOnce)
            try await Task.sleep(for: .milliseconds(2200))
            let second = try sessionClient()
            let received = Collector(second.messages(matching: topic))
            try await second.connect()
            #expect(second.connAck?.sessionPresent == true)
            try await received.wait(count: 1)
            try await Task.sleep(for: .milliseconds(200))
            #expect(received.snapshot.map(\.payload.text) == ["long"])
            await second.disconnect()
            await publisher.disconnect()
        }
    }

    @Test("a will carries its MQTT 5 properties", arguments: mqtt5BrokerKinds)
    func willProperties(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let watcher = try await connectedV5Client(broker, "watch")
            let topic = "will/\(uniqueID("t"))"
            let received = Collector(watcher.messages(matching: topic))
            try await watcher.subscribe(topic, qos: .atLeastOnce)
            var configuration = v5Configuration(broker, clientID: uniqueID("dying"))
            configuration.will = MQTTWill(
                topic: topic, payload: Array("gone".utf8), qos: .atLeastOnce,
                properties: MQTTPublishProperties(
                    contentType: "text/plain", userProperties: [MQTTUserProperty("reason", "crash")]))
            var dying: MQTTClient? = try MQTTClient(configuration: configuration)
            try await dying?.connect()
            dying = nil  // drops the connection without DISCONNECT
            let wills = try await received.wait(count: 1)
            #expect(wills[0].payload.text == "gone")
            #expect(wills[0].properties.contentType == "text/plain")
            #expect(wills[0].properties.userProperties == [MQTTUserProperty("reason", "crash")])
            await watcher.disconnect()
        }
    }

    @Test("MQTT 3.1.1 refuses MQTT 5 features with mqtt5Required, before sending anything")
    func refusedAt311() async throws {
        try await withBroker(.mosquitto) { broker in
            let client = try await connectedClient(broker, "v311")
            await #expect(throws: MQTTClientError.mqtt5Required("publish properties")) {
                try await client.publish(topic: "a", payload: [], properties: MQTTPublishProperties(contentType: "x"))
            }
            await #expect(throws: MQTTClientError.mqtt5Required("subscribe options")) {
                try await client.subscribe("a", qos: .atMostOnce, options: MQTTSubscribeOptions(noLocal: true))
            }
            await #expect(throws: MQTTClientError.mqtt5Required("request/response")) {
                _ = try await client.request(topic: "a", payload: [], timeout: .seconds(1))
            }
            var willConfiguration = testConfiguration(broker, clientID: uniqueID("w311"))
            willConfiguration.will = MQTTWill(topic: "w", payload: [], properties: MQTTPublishProperties(contentType: "x"))
            #expect(throws: MQTTClientError.mqtt5Required("will properties")) {
                _ = try MQTTClient(configuration: willConfiguration)
            }
            // Plain 3.1.1 traffic still works on the same client.
            let received = Collector(client.messages(matching: "plain/#"))
            try await client.subscribe("plain/#", qos: .atLeastOnce)
            try await client.publish(topic: "plain/x", payload: [7], qos: .atLeastOnce)
            let messages = try await received.wait(count: 1)
            #expect(messages[0].properties.isEmpty && messages[0].subscriptionIdentifiers.isEmpty)
            await client.disconnect()
        }
    }
}
