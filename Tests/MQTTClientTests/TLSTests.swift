import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

@Suite("TLS to a real broker", .timeLimit(.minutes(1)))
struct TLSTests {
    @Test("TLS with the right CA works; a foreign CA fails the handshake", arguments: TestBrokerKind.allCases)
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

    @Test("require_certificate: refused without a client certificate, accepted with one", arguments: TestBrokerKind.allCases)
    func mutualTLS(kind: TestBrokerKind) async throws {
        let files = try await TLSFiles.generate()
        defer { files.remove() }
        let alice = try await files.makeClientCertificate(name: "alice")
        try await withBroker(kind, options: BrokerOptions(tls: files, requireCertificate: true)) { broker in
            var anonymous = testConfiguration(broker, clientID: uniqueID("nocert"))
            anonymous.tls = MQTTTLSConfiguration(caFile: files.caCertificate.path)
            anonymous.reconnect = .disabled
            let refused = try MQTTClient(configuration: anonymous)
            do {
                try await withTimeout(.seconds(5), "TLS connect without a client certificate") { try await refused.connect() }
                Issue.record("connect without a client certificate must fail")
            } catch is MQTTClientError {
                // Refused during the handshake (TLS 1.2) or right after it (TLS 1.3 checks the client last).
            }

            var configuration = testConfiguration(broker, clientID: uniqueID("cert"))
            configuration.tls = MQTTTLSConfiguration(
                caFile: files.caCertificate.path, certFile: alice.certificate.path, keyFile: alice.key.path)
            let client = try MQTTClient(configuration: configuration)
            try await withTimeout(.seconds(5), "TLS connect with a client certificate") { try await client.connect() }
            let topic = "mtls/\(uniqueID("t"))"
            try await client.subscribe(topic, qos: .atLeastOnce)
            let received = Collector(client.messages())
            try await client.publish(topic: topic, payload: Array("mutual".utf8), qos: .atLeastOnce)
            #expect(try await received.wait(count: 1).first?.payload.text == "mutual")
            await client.disconnect()
        }
    }
}
