import Foundation
import Logging
import MQTTBroker
import Testing

@Suite("TLS options in the broker config", .timeLimit(.minutes(1)))
struct TLSConfigParserTests {
    @Test("TLS options belong to the listener above them, in any order")
    func perListener() async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        let text = """
            listener 1883
            listener 8883
            cafile \(pki.path("ca.crt"))
            tls_version tlsv1.3
            require_certificate true
            use_identity_as_username true
            keyfile \(pki.path("server.key"))
            certfile \(pki.path("server.crt"))
            listener 8884 0.0.0.0
            certfile \(pki.path("server.crt"))
            keyfile \(pki.path("server.key"))
            """
        let listeners = try BrokerConfigParser.parse(text).configuration.listeners
        #expect(listeners.count == 3)
        #expect(listeners[0] == .init(host: "127.0.0.1", port: 1883))
        #expect(listeners[1].tls == BrokerTLSConfiguration(
            certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key"), caFile: pki.path("ca.crt"),
            requireCertificate: true, useIdentityAsUsername: true, minimumVersion: .tls1_3))
        #expect(listeners[2].tls == BrokerTLSConfiguration(
            certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key")))
        #expect(listeners[2].tls?.requireCertificate == false)
        #expect(listeners[2].tls?.minimumVersion == .tls1_2)
    }

    @Test("inconsistent or misplaced TLS options name their line")
    func inconsistent() async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        let cert = "certfile \(pki.path("server.crt"))"
        let key = "keyfile \(pki.path("server.key"))"
        let ca = "cafile \(pki.path("ca.crt"))"
        let cases: [(String, BrokerConfigError)] = [
            ("\(cert)\nlistener 8883", tls(1, "certfile", "must follow a listener line")),
            ("listener 8883\n\(cert)", tls(2, "certfile", "needs a keyfile in the same listener (certfile and keyfile make a listener TLS)")),
            ("listener 8883\n\n\(key)", tls(3, "keyfile", "needs a certfile in the same listener (certfile and keyfile make a listener TLS)")),
            ("listener 8883\n\(ca)", tls(2, "cafile", "is a TLS option, but this listener has no certfile and keyfile")),
            // The keyfile belongs to the second listener: the first has a lone certfile.
            ("listener 1\n\(cert)\nlistener 2\n\(key)", tls(2, "certfile", "needs a keyfile in the same listener (certfile and keyfile make a listener TLS)")),
            ("listener 8883\n\(cert)\n\(key)\nrequire_certificate true", tls(4, "require_certificate", "true needs a cafile in the same listener")),
            ("listener 8883\n\(cert)\n\(key)\n\(ca)\nuse_identity_as_username true",
             tls(5, "use_identity_as_username", "true needs require_certificate true in the same listener")),
            ("listener 8883\ntls_version tlsv1.1", .invalidValue(source: "t", line: 2, option: "tls_version", value: "tlsv1.1", expected: "tlsv1.2 or tlsv1.3")),
            ("listener 8883\nrequire_certificate yes", .invalidValue(source: "t", line: 2, option: "require_certificate", value: "yes", expected: "true or false")),
            ("listener 8883\ncertfile", .missingValue(source: "t", line: 2, option: "certfile")),
            ("listener 8883\ncapath /etc/ssl", .unsupportedOption(source: "t", line: 2, option: "capath")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try BrokerConfigParser.parse(text, source: "t") }
        }
        #expect(tls(2, "certfile", "x").description == "t:2: certfile x")
    }

    @Test("a missing, unreadable or wrong file fails at parse time with its path and line")
    func badFiles() async throws {
        let pki = try await TestCertificates.make(clients: ["alice"])
        defer { pki.remove() }
        let garbage = pki.path("garbage.pem")
        try "this is not PEM\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let cert = "certfile \(pki.path("server.crt"))"
        let key = "keyfile \(pki.path("server.key"))"
        let cases: [(text: String, line: Int, option: String, reason: String)] = [
            ("listener 8883\ncertfile /nonexistent/server.crt\n\(key)", 2, "certfile", "/nonexistent/server.crt: no such file"),
            ("listener 8883\ncertfile \(garbage)\n\(key)", 2, "certfile", "\(garbage): not a PEM certificate file"),
            ("listener 8883\ncertfile \(pki.directory.path)\n\(key)", 2, "certfile", "\(pki.directory.path): is a directory"),
            ("listener 8883\n\(cert)\nkeyfile /nonexistent/server.key", 3, "keyfile", "/nonexistent/server.key: no such file"),
            ("listener 8883\n\(cert)\nkeyfile \(pki.path("server.crt"))", 3, "keyfile", "\(pki.path("server.crt")): not an unencrypted PEM private key"),
            // alice's key does not belong to the server certificate.
            ("listener 8883\n\(cert)\nkeyfile \(pki.path("alice.key"))", 3, "keyfile", "\(pki.path("alice.key")): cannot be used with certfile \(pki.path("server.crt"))"),
            ("listener 8883\n\(cert)\n\(key)\ncafile \(garbage)", 4, "cafile", "\(garbage): not a PEM certificate file"),
            ("listener 8883\n\(cert)\n\(key)\ncafile /nonexistent/ca.crt", 4, "cafile", "/nonexistent/ca.crt: no such file"),
        ]
        for item in cases {
            do {
                _ = try BrokerConfigParser.parse(item.text, source: "t.conf")
                Issue.record("accepted: \(item.text)")
            } catch {
                guard case .invalidFile(let source, let line, let option, let reason) = error else {
                    Issue.record("\(item.text): unexpected \(error)")
                    continue
                }
                #expect(source == "t.conf")
                #expect(line == item.line, "\(item.text)")
                #expect(option == item.option, "\(item.text)")
                #expect(reason.hasPrefix(item.reason), "\(reason) should start with \(item.reason)")
                #expect(error.description.hasPrefix("t.conf:\(item.line): \(item.option): "))
            }
        }
    }

    @Test("validate() and start() report a bad file with a typed error naming it")
    func typedErrors() async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        var tls = BrokerTLSConfiguration(certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key"))
        try tls.validate()
        tls.caFile = "/nonexistent/ca.crt"
        #expect(throws: BrokerTLSError.invalidCAFile(path: "/nonexistent/ca.crt", reason: "no such file")) { try tls.validate() }
        tls.caFile = nil
        tls.requireCertificate = true
        #expect(throws: BrokerTLSError.requireCertificateWithoutCAFile) { try tls.validate() }
        tls.caFile = pki.path("ca.crt")
        tls.useIdentityAsUsername = true
        try tls.validate()
        tls.requireCertificate = false
        #expect(throws: BrokerTLSError.identityWithoutRequiredCertificate) { try tls.validate() }

        var configuration = BrokerConfiguration()
        configuration.sysInterval = nil
        configuration.listeners = [
            .init(port: 0),
            .init(port: 0, tls: .init(certificateFile: "/nonexistent/server.crt", privateKeyFile: pki.path("server.key"))),
        ]
        var logger = Logger(label: "mqttchat.broker.test")
        logger.logLevel = .critical
        let server = MQTTBrokerServer(configuration: configuration, logger: logger)
        await #expect(throws: BrokerTLSError.invalidCertificateFile(path: "/nonexistent/server.crt", reason: "no such file")) {
            try await server.start()
        }
        await server.shutdown()
    }

    private func tls(_ line: Int, _ option: String, _ reason: String) -> BrokerConfigError {
        .invalidTLSSettings(source: "t", line: line, option: option, reason: reason)
    }
}
