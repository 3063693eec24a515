import Foundation
import MQTTClient
import MQTTCore
import Testing

@Suite("TLS to a real broker", .timeLimit(.minutes(1)))
struct TLSTests {
    // ours: TLS listeners come with the reliability/security issue; until then this runs against mosquitto only.
    @Test("TLS with the right CA works; a foreign CA fails the handshake", arguments: [TestBrokerKind.mosquitto])
    func tls(kind: TestBrokerKind) async throws {
        let files = try await TLSFiles.generate()
        let foreign = try await TLSFiles.generate(name: "some other CA", caOnly: true)
        defer {
            files.remove()
            foreign.remove()
        }
        try await withBroker(kind, options: BrokerOptions(tls: files)) { broker in
            var configuration = testConfiguration(broker, clientID: uniqueID("tls"))
            configuration.tls = MQTTTLSConfiguration(caFile: files.caCertificate.path, tlsVersion: "tlsv1.2")
            let client = try MQTTClient(configuration: configuration)
            try await withTimeout(.seconds(5), "TLS connect") { try await client.connect() }
            let topic = "tls/\(uniqueID("t"))"
            try await client.subscribe(topic, qos: .atLeastOnce)
            let received = Collector(client.messages())
            try await client.publish(topic: topic, payload: Array("secret".utf8), qos: .atLeastOnce)
            #expect(try await received.wait(count: 1).first?.payload.text == "secret")
            await client.disconnect()

            var wrong = testConfiguration(broker, clientID: uniqueID("tlsbad"))
            wrong.tls = MQTTTLSConfiguration(caFile: foreign.caCertificate.path)
            let refused = try MQTTClient(configuration: wrong)
            do {
                try await withTimeout(.seconds(5), "TLS connect with foreign CA") { try await refused.connect() }
                Issue.record("connect with a foreign CA must fail")
            } catch let error as MQTTClientError {
                guard case .tlsHandshakeFailed = error else {
                    Issue.record("expected tlsHandshakeFailed, got \(error)")
                    return
                }
            }
        }
    }
}
