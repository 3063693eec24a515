import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("Publishing and receiving through a real broker", .timeLimit(.minutes(1)))
struct MessagingTests {
    @Test(
        "QoS round trips deliver every message (QoS 2 exactly once)",
        arguments: TestBrokerKind.allCases, QoS.allCases)
    func roundTrip(kind: TestBrokerKind, qos: QoS) async throws {
        try await withBroker(kind) { broker in
            let subscriber = try await connectedClient(broker, "sub")
            let publisher = try await connectedClient(broker, "pub")
            let topic = "rt/\(uniqueID("t"))"
            let granted = try await subscriber.subscribe(topic, qos: .exactlyOnce)
            #expect(granted == .exactlyOnce)
            let received = Collector(subscriber.messages())
            let count = 20
            for index in 0..<count {
                try await withTimeout(.seconds(5), "publish \(index)") {
                    try await publisher.publish(topic: topic, payload: Array("m\(index)".utf8), qos: qos)
                }
            }
            let messages = try await received.wait(count: count)
            #expect(messages.map(\.payload.text) == (0..<count).map { "m\($0)" })
            #expect(messages.allSatisfy { $0.topic == topic && $0.qos == qos && !$0.retain })
            if qos == .exactlyOnce {
                try await Task.sleep(for: .milliseconds(300))
                #expect(received.snapshot.count == count, "QoS 2 must not deliver duplicates")
            }
            await subscriber.disconnect()
            await publisher.disconnect()
        }
    }

    @Test("a client subscribed to its own clientID topic receives what another client sends there",
          arguments: TestBrokerKind.allCases)
    func ownClientIDTopic(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let alice = try await connectedClient(broker, "alice")
            let bob = try await connectedClient(broker, "bob")
            let inbox = "clients/\(alice.configuration.clientID)"
            try await alice.subscribe(inbox, qos: .atLeastOnce)
            let everything = Collector(alice.messages())
            let inboxOnly = Collector(alice.messages(matching: "clients/+"))
            let otherOnly = Collector(alice.messages(matching: "elsewhere/#"))
            try await bob.publish(topic: inbox, payload: Array("hi alice".utf8), qos: .atLeastOnce)
            let got = try await inboxOnly.wait(count: 1)
            #expect(got.first?.payload.text == "hi alice")
            try await everything.wait(count: 1)
            #expect(otherOnly.snapshot.isEmpty)
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test("retained messages arrive flagged, unsubscribe stops delivery", arguments: TestBrokerKind.allCases)
    func retainAndUnsubscribe(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try await connectedClient(broker, "ru")
            let topic = "ret/\(uniqueID("t"))"
            try await client.publish(topic: topic, payload: Array("kept".utf8), qos: .atLeastOnce, retain: true)
            let received = Collector(client.messages())
            try await client.subscribe(topic, qos: .atLeastOnce)
            let retained = try await received.wait(count: 1)
            #expect(retained.first?.retain == true)
            #expect(retained.first?.payload.text == "kept")
            try await client.unsubscribe(topic)
            try await client.publish(topic: topic, payload: Array("after".utf8), qos: .atLeastOnce)
            try await Task.sleep(for: .milliseconds(200))
            #expect(received.snapshot.count == 1, "no delivery after UNSUBACK")
            await client.disconnect()
        }
    }

    @Test("8 tasks x 200 concurrent QoS 1 publishes arrive without loss", arguments: TestBrokerKind.allCases)
    func concurrentPublishes(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let subscriber = try await connectedClient(broker, "csub")
            let publisher = try await connectedClient(broker, "cpub")
            let topic = "load/\(uniqueID("t"))"
            try await subscriber.subscribe(topic, qos: .atLeastOnce)
            let received = Collector(subscriber.messages())
            let tasks = 8
            let perTask = 200
            try await withTimeout(.seconds(30), "concurrent publishes") {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<tasks {
                        group.addTask {
                            for index in 0..<perTask {
                                try await publisher.publish(
                                    topic: topic, payload: Array("\(task)-\(index)".utf8), qos: .atLeastOnce)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            let messages = try await received.wait(count: tasks * perTask, timeout: .seconds(20))
            #expect(Set(messages.map(\.payload.text)).count == tasks * perTask)
            await subscriber.disconnect()
            await publisher.disconnect()
        }
    }

    @Test(
        "QoS 0 from one loop through a send queue of 3: every publish returns, all arrive in order",
        arguments: TestBrokerKind.allCases)
    func qos0QueueBackpressure(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let subscriber = try await connectedClient(broker, "q0sub")
            var configuration = testConfiguration(broker, clientID: uniqueID("q0pub"))
            configuration.qos0QueueLimit = 3
            let publisher = try MQTTClient(configuration: configuration)
            try await publisher.connect()
            let topic = "q0/\(uniqueID("t"))"
            try await subscriber.subscribe(topic, qos: .atMostOnce)
            let received = Collector(subscriber.messages())
            let count = 2000
            try await withTimeout(.seconds(20), "QoS 0 loop") {
                for index in 0..<count {
                    try await publisher.publish(topic: topic, payload: Array("\(index)".utf8), qos: .atMostOnce)
                }
            }
            let messages = try await received.wait(count: count, timeout: .seconds(20))
            #expect(messages.map(\.payload.text) == (0..<count).map { "\($0)" })
            await publisher.disconnect()
            await subscriber.disconnect()
        }
    }

    @Test("QoS 0 publishes queued right before disconnect() are written before the DISCONNECT",
          arguments: TestBrokerKind.allCases)
    func qos0FlushedByDisconnect(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let subscriber = try await connectedClient(broker, "q0fsub")
            let publisher = try await connectedClient(broker, "q0fpub")
            let topic = "q0f/\(uniqueID("t"))"
            try await subscriber.subscribe(topic, qos: .atMostOnce)
            let received = Collector(subscriber.messages())
            for index in 0..<200 {
                try await publisher.publish(topic: topic, payload: Array("\(index)".utf8), qos: .atMostOnce)
            }
            await publisher.disconnect()
            let messages = try await received.wait(count: 200, timeout: .seconds(10))
            #expect(messages.map(\.payload.text) == (0..<200).map { "\($0)" })
            await subscriber.disconnect()
        }
    }

    @Test("QoS 1 publishes complete while the same client is flooded with incoming messages",
          arguments: TestBrokerKind.allCases)
    func acknowledgementsNotStarvedByIncomingFlood(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let flooded = try await connectedClient(broker, "flooded")
            let flooder = try await connectedClient(broker, "flooder")
            let floodTopic = "flood/\(uniqueID("t"))"
            try await flooded.subscribe(floodTopic, qos: .atMostOnce)
            // Paced at about 40,000 messages a second: a broker queues QoS 0 for a busy subscriber without limit
            // (mosquitto does), and an unpaced flood would put the PUBACKs behind seconds of queued messages.
            let flood = Task {
                let payload = [UInt8](repeating: 0x46, count: 256)
                while !Task.isCancelled {
                    for _ in 0..<100 { try await flooder.publish(topic: floodTopic, payload: payload, qos: .atMostOnce) }
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
            defer { flood.cancel() }
            // The callbacks hold acknowledgements back while the socket stays busy; they must still come through.
            for index in 0..<20 {
                try await withTimeout(.seconds(5), "QoS 1 publish \(index) during the flood") {
                    try await flooded.publish(topic: "ack/\(index)", payload: [1], qos: .atLeastOnce)
                }
            }
            flood.cancel()
            _ = await flood.result
            await flooder.disconnect()
            await flooded.disconnect()
        }
    }
}
