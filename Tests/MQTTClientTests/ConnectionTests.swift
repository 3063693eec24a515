import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("Connecting to a real broker", .timeLimit(.minutes(1)))
struct ConnectionTests {
    @Test("connect then disconnect reports connecting, connected, closed", arguments: TestBrokerKind.allCases)
    func connectDisconnect(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let client = try MQTTClient(configuration: testConfiguration(broker, clientID: uniqueID("cd")))
            #expect(client.state == nil)
            let states = Collector(client.stateChanges())
            try await withTimeout(.seconds(5), "connect") { try await client.connect() }
            #expect(client.state == .connected(sessionPresent: false))
            try await withTimeout(.seconds(5), "disconnect") { await client.disconnect() }
            try await states.wait(count: 3)
            #expect(states.snapshot == [.connecting, .connected(sessionPresent: false), .closed])
            await #expect(throws: MQTTClientError.notConnected) {
                try await client.publish(topic: "a/b", payload: [1], qos: .atLeastOnce)
            }
        }
    }

    @Test("a wrong password is refused with the broker's CONNACK code", arguments: TestBrokerKind.allCases)
    func wrongPassword(kind: TestBrokerKind) async throws {
        try await withBroker(kind, options: BrokerOptions(users: ["alice": "secret"])) { broker in
            var configuration = testConfiguration(broker, clientID: uniqueID("pw"))
            configuration.username = "alice"
            configuration.password = "wrong"
            let refused = try MQTTClient(configuration: configuration)
            // The brokers differ here: ours answers CONNACK 4 (bad user name or password, MQTT 3.1.1 3.2.2.3),
            // mosquitto 2.0 answers 5 (not authorised). Each broker's exact code is asserted.
            let refusal = kind.wrongPasswordRefusal
            await #expect(throws: refusal) {
                try await withTimeout(.seconds(5), "refused connect") { try await refused.connect() }
            }
            #expect(refused.state == .disconnected(reason: .connectFailed(refusal)))

            // Without credentials at all both brokers answer 5 (not authorised).
            var anonymousConfiguration = testConfiguration(broker, clientID: uniqueID("anon"))
            anonymousConfiguration.username = nil
            let anonymous = try MQTTClient(configuration: anonymousConfiguration)
            await #expect(throws: MQTTClientError.notAuthorized) {
                try await withTimeout(.seconds(5), "anonymous connect") { try await anonymous.connect() }
            }

            configuration.password = "secret"
            let accepted = try MQTTClient(configuration: configuration)
            try await withTimeout(.seconds(5), "accepted connect") { try await accepted.connect() }
            await accepted.disconnect()
        }
    }

    @Test("nothing listening gives connectionRefused; a bad host name gives dnsFailure")
    func networkErrors() async throws {
        let (held, port) = try refusingPort()
        defer { close(held) }
        let client = try MQTTClient(configuration: MQTTClientConfiguration(clientID: uniqueID("nr"), port: port))
        await #expect(throws: MQTTClientError.connectionRefused) {
            try await withTimeout(.seconds(5), "connect") { try await client.connect() }
        }
        let badHost = try MQTTClient(
            configuration: MQTTClientConfiguration(clientID: uniqueID("dns"), host: "no-such-host.invalid", port: 1883))
        await #expect(throws: MQTTClientError.dnsFailure(host: "no-such-host.invalid")) {
            try await withTimeout(.seconds(10), "connect") { try await badHost.connect() }
        }
    }

    @Test("invalid configurations and topics are typed errors")
    func invalidInput() async throws {
        #expect(throws: MQTTClientError.self) { try MQTTClient(configuration: MQTTClientConfiguration(clientID: "")) }
        let client = try MQTTClient(configuration: MQTTClientConfiguration(clientID: uniqueID("inv")))
        await #expect(throws: MQTTClientError.invalidTopic("a/+")) {
            try await client.publish(topic: "a/+", payload: [])
        }
        await #expect(throws: MQTTClientError.invalidTopic("a/#/b")) {
            try await client.subscribe("a/#/b", qos: .atMostOnce)
        }
        await #expect(throws: MQTTClientError.notConnected) {
            try await client.subscribe("a/b", qos: .atMostOnce)
        }
    }

    @Test("the will is published when the client process is killed", arguments: TestBrokerKind.allCases)
    func willOnKill(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let watcher = try await connectedClient(broker, "watcher")
            let id = uniqueID("probe")
            let willTopic = "will/\(id)"
            try await watcher.subscribe(willTopic, qos: .atLeastOnce)
            let wills = Collector(watcher.messages(matching: willTopic))

            let outputPath = broker.directory.appendingPathComponent("probe-\(id).out").path
            let probe = try SpawnedProcess(
                probeExecutable().path, [String(broker.port), id, willTopic, "gone"], outputPath: outputPath)
            let connected = try await poll(every: .milliseconds(20), for: .seconds(10)) {
                ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").contains("connected")
            }
            #expect(connected, "probe connected")
            try await Task.sleep(for: .milliseconds(100))
            #expect(wills.snapshot.isEmpty, "no will while the probe lives")

            probe.send(SIGKILL)
            await probe.waitForExit()
            let received = try await wills.wait(count: 1, timeout: .seconds(10))
            #expect(received.first?.topic == willTopic)
            #expect(received.first?.payload.text == "gone")
            await watcher.disconnect()
        }
    }
}

/// The MQTTClientProbe executable, built next to the test bundle.
func probeExecutable() -> URL {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return executable.deletingLastPathComponent().appendingPathComponent("MQTTClientProbe")
}
