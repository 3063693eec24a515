import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("MQTT 5 sessions and CONNACK properties through a real broker", .timeLimit(.minutes(1)))
struct MQTT5SessionTests {
    @Test(
        "within the session expiry a reconnect finds the session and its queued QoS 1 message; without it, nothing",
        arguments: mqtt5BrokerKinds, [UInt32(60), 0])
    func sessionExpiry(kind: TestBrokerKind, expiry: UInt32) async throws {
        try await withBroker(kind) { broker in
            let id = uniqueID("sess")
            let topic = "sess/\(uniqueID("t"))"
            func client(cleanStart: Bool) throws -> MQTTClient {
                var configuration = v5Configuration(broker, clientID: id)
                configuration.cleanSession = cleanStart
                configuration.sessionExpiryInterval = expiry
                return try MQTTClient(configuration: configuration)
            }
            let first = try client(cleanStart: true)
            try await first.connect()
            #expect(first.connAck?.sessionPresent == false)
            try await first.subscribe(topic, qos: .atLeastOnce)
            await first.disconnect()

            let publisher = try await connectedV5Client(broker, "spub")
            try await publisher.publish(topic: topic, payload: Array("while away".utf8), qos: .atLeastOnce)

            let second = try client(cleanStart: false)
            let states = Collector(second.stateChanges())
            let received = Collector(second.messages(matching: topic))
            try await second.connect()
            let resumed = expiry > 0
            #expect(second.connAck?.sessionPresent == resumed)
            #expect(states.snapshot.last == .connected(sessionPresent: resumed))
            if resumed {
                #expect(try await received.wait(count: 1).map(\.payload.text) == ["while away"])
            } else {
                try await Task.sleep(for: .milliseconds(300))
                #expect(received.snapshot.isEmpty)
            }
            await second.disconnect()
            await publisher.disconnect()
        }
    }

    @Test("an empty client id gets one assigned by the broker, reported in the CONNACK", arguments: mqtt5BrokerKinds)
    func assignedClientIdentifier(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try MQTTClient(configuration: v5Configuration(broker, clientID: ""))
            try await client.connect()
            let assigned = try #require(client.connAck?.assignedClientIdentifier)
            #expect(!assigned.isEmpty)
            // The connection works with it.
            let received = Collector(client.messages(matching: "assigned/#"))
            try await client.subscribe("assigned/#", qos: .atLeastOnce)
            try await client.publish(topic: "assigned/x", payload: [1], qos: .atLeastOnce)
            try await received.wait(count: 1)
            await client.disconnect()

            let named = try await connectedV5Client(broker, "named")
            #expect(named.connAck?.assignedClientIdentifier == nil)
            await named.disconnect()
            #expect(throws: MQTTClientError.self) {
                _ = try MQTTClient(configuration: testConfiguration(broker, clientID: ""))  // 3.1.1
            }
        }
    }

    @Test("the CONNACK's server limits are visible to the caller", arguments: mqtt5BrokerKinds)
    func serverCapabilities(kind: TestBrokerKind) async throws {
        let options = BrokerOptions(lines: [
            "max_qos 1", "retain_available false", "max_packet_size 10000", "max_inflight_messages 7",
            "max_keepalive 10", "max_topic_alias 3",
        ])
        try await withBroker(kind, options: options) { broker in
            let client = try await connectedV5Client(broker, "caps") { $0.keepAlive = .seconds(30) }
            let connAck = try #require(client.connAck)
            #expect(connAck.sessionPresent == false)
            #expect(connAck.maximumQoS == .atLeastOnce)
            #expect(connAck.retainAvailable == false)
            #expect(connAck.maximumPacketSize == 10000)
            #expect(connAck.receiveMaximum == 7)
            #expect(connAck.serverKeepAlive == 10)
            #expect(connAck.topicAliasMaximum == 3)
            await client.disconnect()
        }
    }
}
