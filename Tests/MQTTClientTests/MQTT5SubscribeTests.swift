import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("MQTT 5 subscribe options through a real broker", .timeLimit(.minutes(1)))
struct MQTT5SubscribeTests {
    /// Publishes a marker from `client` and waits for it: everything the broker queued for `client` on `topic`
    /// before (retained messages, earlier publishes) has arrived by then.
    func fence(_ client: MQTTClient, _ topic: String, _ received: Collector<MQTTMessage>) async throws {
        let marker = uniqueID("fence")
        try await client.publish(topic: topic, payload: Array(marker.utf8), qos: .atLeastOnce)
        try await received.wait(timeout: .seconds(5), "fence") { $0.contains { $0.payload.text == marker } }
    }

    @Test("no local suppresses the client's own messages, and only those", arguments: mqtt5BrokerKinds)
    func noLocal(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let quiet = try await connectedV5Client(broker, "nolocal")
            let other = try await connectedV5Client(broker, "other")
            let topic = "nl/\(uniqueID("t"))"
            let quietReceived = Collector(quiet.messages(matching: topic))
            let otherReceived = Collector(other.messages(matching: topic))
            try await quiet.subscribe(topic, qos: .atLeastOnce, options: MQTTSubscribeOptions(noLocal: true))
            try await other.subscribe(topic, qos: .atLeastOnce)
            for index in 0..<5 {
                try await quiet.publish(topic: topic, payload: Array("own \(index)".utf8), qos: .atLeastOnce)
            }
            for index in 0..<3 {
                try await other.publish(topic: topic, payload: Array("other \(index)".utf8), qos: .atLeastOnce)
            }
            try await otherReceived.wait(count: 8)
            try await fence(other, topic, quietReceived)
            let texts = quietReceived.snapshot.map(\.payload.text).filter { !$0.hasPrefix("fence") }
            #expect(texts == ["other 0", "other 1", "other 2"])
            #expect(otherReceived.snapshot.filter { $0.payload.text.hasPrefix("own") }.count == 5)
            await quiet.disconnect()
            await other.disconnect()
        }
    }

    @Test(
        "retain handling 0 sends retained messages at every SUBSCRIBE, 1 only for a new one, 2 never",
        arguments: mqtt5BrokerKinds, [MQTTRetainHandling.sendOnSubscribe, .sendIfNewSubscription, .doNotSend])
    func retainHandling(kind: TestBrokerKind, handling: MQTTRetainHandling) async throws {
        try await withBroker(kind) { broker in
            let client = try await connectedV5Client(broker, "rh")
            let topic = "rh/\(uniqueID("t"))"
            try await client.publish(topic: topic, payload: Array("kept".utf8), qos: .atLeastOnce, retain: true)
            let received = Collector(client.messages(matching: topic))
            let options = MQTTSubscribeOptions(retainHandling: handling)
            try await client.subscribe(topic, qos: .atLeastOnce, options: options)
            try await client.subscribe(topic, qos: .atLeastOnce, options: options)  // the subscription exists now
            try await fence(client, topic, received)
            let retained = received.snapshot.filter { $0.payload.text == "kept" }
            let expected = [MQTTRetainHandling.sendOnSubscribe: 2, .sendIfNewSubscription: 1, .doNotSend: 0]
            #expect(retained.count == expected[handling])
            #expect(retained.allSatisfy { $0.retain })
            await client.disconnect()
        }
    }

    @Test("retain as published keeps the retain flag on live deliveries", arguments: mqtt5BrokerKinds)
    func retainAsPublished(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let keeping = try await connectedV5Client(broker, "rap")
            let plain = try await connectedV5Client(broker, "plain")
            let topic = "rap/\(uniqueID("t"))"
            let keepingReceived = Collector(keeping.messages(matching: topic))
            let plainReceived = Collector(plain.messages(matching: topic))
            try await keeping.subscribe(topic, qos: .atLeastOnce, options: MQTTSubscribeOptions(retainAsPublished: true))
            try await plain.subscribe(topic, qos: .atLeastOnce)
            try await plain.publish(topic: topic, payload: Array("live".utf8), qos: .atLeastOnce, retain: true)
            #expect(try await keepingReceived.wait(count: 1)[0].retain == true)
            #expect(try await plainReceived.wait(count: 1)[0].retain == false)
            await keeping.disconnect()
            await plain.disconnect()
        }
    }

    @Test("deliveries carry the identifiers of the subscriptions that matched", arguments: mqtt5BrokerKinds)
    func subscriptionIdentifiers(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try await connectedV5Client(broker, "sid")
            let root = "sid/\(uniqueID("t"))"
            let received = Collector(client.messages())
            try await client.subscribe("\(root)/#", qos: .atLeastOnce, options: MQTTSubscribeOptions(subscriptionIdentifier: 7))
            try await client.subscribe(
                "\(root)/+/x", qos: .atLeastOnce, options: MQTTSubscribeOptions(subscriptionIdentifier: 268_435_455))
            try await client.subscribe("\(root)-none", qos: .atLeastOnce)
            let results = try await client.subscribe(
                ["\(root)-m/1", "\(root)-m/2"], qos: .atLeastOnce, options: MQTTSubscribeOptions(subscriptionIdentifier: 11))
            #expect(results == [.granted(.atLeastOnce), .granted(.atLeastOnce)])
            for topic in ["\(root)/a/x", "\(root)/b/y", "\(root)-none", "\(root)-m/1", "\(root)-m/2"] {
                try await client.publish(topic: topic, payload: Array(topic.utf8), qos: .atLeastOnce)
            }
            try await fence(client, "\(root)-none", received)
            let messages = received.snapshot
            func identifiers(_ topic: String) -> Set<Int> {
                Set(messages.filter { $0.topic == topic }.flatMap(\.subscriptionIdentifiers))
            }
            // One copy with both identifiers or one copy per subscription: either way both identifiers arrive.
            #expect(identifiers("\(root)/a/x") == [7, 268_435_455])
            #expect(identifiers("\(root)/b/y") == [7])
            #expect(identifiers("\(root)-none").isEmpty)
            #expect(messages.filter { $0.topic.hasPrefix("\(root)-m/") }.map(\.subscriptionIdentifiers) == [[11], [11]])
            await #expect(throws: MQTTClientError.self) {
                try await client.subscribe("x", qos: .atMostOnce, options: MQTTSubscribeOptions(subscriptionIdentifier: 0))
            }
            await client.disconnect()
        }
    }

    @Test("subscriptions restored after a broker restart keep no local and their identifier", arguments: mqtt5BrokerKinds)
    func restoredSubscriptionKeepsOptions(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try await connectedV5Client(broker, "restore")
            let topic = "restore/\(uniqueID("t"))"
            try await client.subscribe(
                topic, qos: .atLeastOnce, options: MQTTSubscribeOptions(noLocal: true, subscriptionIdentifier: 5))
            let states = Collector(client.stateChanges())
            let received = Collector(client.messages(matching: topic))
            try await broker.restart()
            try await states.wait(timeout: .seconds(10), "reconnected") { states in
                states.contains(where: \.isReconnecting) && states.last == .connected(sessionPresent: false)
            }
            let other = try await connectedV5Client(broker, "other")
            // The restoring SUBSCRIBE races with this publisher: publish until one arrives.
            let arrived = try await poll(every: .milliseconds(100), for: .seconds(5)) {
                try await other.publish(topic: topic, payload: Array("probe".utf8), qos: .atLeastOnce)
                return !received.snapshot.isEmpty
            }
            #expect(arrived)
            try await client.publish(topic: topic, payload: Array("own".utf8), qos: .atLeastOnce)
            let marker = uniqueID("fence")
            try await other.publish(topic: topic, payload: Array(marker.utf8), qos: .atLeastOnce)
            let messages = try await received.wait(timeout: .seconds(5), "fence") {
                $0.contains { $0.payload.text == marker }
            }
            #expect(!messages.contains { $0.payload.text == "own" }, "no local survived the restore")
            #expect(messages.allSatisfy { $0.subscriptionIdentifiers == [5] })
            await other.disconnect()
            await client.disconnect()
        }
    }
}
