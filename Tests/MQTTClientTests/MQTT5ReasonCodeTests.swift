import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("MQTT 5 reason codes as typed errors, through a real broker", .timeLimit(.minutes(1)))
struct MQTT5ReasonCodeTests {
    @Test("a PUBACK or PUBREC 0x87 from the ACL fails that publish with notAuthorized", arguments: mqtt5BrokerKinds)
    func publishDenied(kind: TestBrokerKind) async throws {
        let (options, directory) = try aclOptions(["topic readwrite allowed/#", "topic read readonly/#"])
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withBroker(kind, options: options) { broker in
            let client = try await connectedV5Client(broker, "acl")
            for qos in [QoS.atLeastOnce, .exactlyOnce] {
                await #expect(throws: MQTTClientError.notAuthorized) {
                    try await withTimeout(.seconds(5), "denied publish") {
                        try await client.publish(topic: "readonly/x", payload: [1], qos: qos)
                    }
                }
            }
            // 0x10 "no matching subscribers" is a success, and the connection is still fine.
            try await client.publish(topic: "allowed/nobody", payload: [2], qos: .atLeastOnce)
            let received = Collector(client.messages(matching: "allowed/#"))
            try await client.subscribe("allowed/#", qos: .exactlyOnce)
            try await client.publish(topic: "allowed/x", payload: [3], qos: .exactlyOnce)
            #expect(try await received.wait(count: 1)[0].payload == [3])
            #expect(client.state == .connected(sessionPresent: false))
            await client.disconnect()
        }
    }

    @Test("a SUBACK answers per filter; a refused single filter throws its reason", arguments: mqtt5BrokerKinds)
    func subscribeDeniedPerFilter(kind: TestBrokerKind) async throws {
        // mosquitto 2.0.11's acl_file grants every SUBSCRIBE; its dynamic security plugin can refuse one.
        guard let (options, directory) = try subscribeDenyingOptions(deniedPattern: "denied/#") else {
            Issue.record("mosquitto_dynamic_security.so is not installed")
            return
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withBroker(kind, options: options) { broker in
            let client = try await connectedV5Client(broker, "subacl")
            let results = try await client.subscribe(["denied/x", "allowed/y", "denied/#"], qos: .atLeastOnce)
            #expect(results == [.refused(.notAuthorized), .granted(.atLeastOnce), .refused(.notAuthorized)])
            await #expect(throws: MQTTClientError.notAuthorized) {
                try await client.subscribe("denied/z", qos: .atMostOnce)
            }
            let received = Collector(client.messages())
            try await client.publish(topic: "allowed/y", payload: [1], qos: .atLeastOnce)
            try await client.publish(topic: "denied/x", payload: [2], qos: .atLeastOnce)
            try await received.wait(count: 1)
            try await Task.sleep(for: .milliseconds(200))
            #expect(received.snapshot.map(\.topic) == ["allowed/y"])
            await client.disconnect()
        }
    }

    @Test("a DISCONNECT from the server reports its reason code on the state stream")
    func serverDisconnectReason() async throws {
        let (listener, port) = try listeningSocket()
        defer { close(listener) }
        let server = Task {
            try await offPool { try serveOneDisconnect(listener: listener, reasonCode: 0x98, reasonString: "kicked") }
        }
        var configuration = MQTTClientConfiguration(clientID: uniqueID("kicked"), port: port)
        configuration.protocolVersion = .v5
        configuration.keepAlive = .seconds(5)
        configuration.reconnect = .disabled
        let client = try MQTTClient(configuration: configuration)
        let states = Collector(client.stateChanges())
        try await withTimeout(.seconds(5), "connect") { try await client.connect() }
        let history = try await states.wait(timeout: .seconds(5), "disconnected") { states in
            states.contains { if case .disconnected = $0 { true } else { false } }
        }
        try await server.value
        guard case .disconnected(.connectionLost(.reasonCode(let code, let reasonString))) = history.last else {
            Issue.record("expected a reason code, got \(history)")
            return
        }
        #expect(code == MQTTReasonCode(rawValue: 0x98))  // administrative action
        // libmosquitto 2.0.11 frees the DISCONNECT's properties before calling on_disconnect_v5 (it passes NULL);
        // a fixed libmosquitto delivers the Reason String.
        #expect(reasonString == nil || reasonString == "kicked")
    }
}
