import Foundation
import LiveTestSupport
import MQTTBroker
import Testing

@Suite("protocol and http_dir listener options")
struct WebSocketConfigParserTests {
    @Test("protocol and http_dir belong to the listener above them, in any order; mqtt is the default")
    func perListener() throws {
        let web = try makeTemporaryDirectory(prefix: "ws-config")
        defer { try? FileManager.default.removeItem(at: web) }
        let text = """
            listener 1883
            listener 8080 127.0.0.1
            http_dir \(web.path)
            protocol websockets
            listener 9001
            protocol websockets
            listener 1884
            protocol mqtt
            """
        let listeners = try BrokerConfigParser.parse(text).configuration.listeners
        #expect(listeners.count == 4)
        #expect(listeners[0] == .init(host: "127.0.0.1", port: 1883))
        #expect(listeners[0].transportProtocol == .mqtt)
        #expect(listeners[1] == .init(host: "127.0.0.1", port: 8080, transportProtocol: .websockets, httpDirectory: web.path))
        #expect(listeners[2] == .init(host: "127.0.0.1", port: 9001, transportProtocol: .websockets))
        #expect(listeners[3].transportProtocol == .mqtt)
        #expect(listeners[3].httpDirectory == nil)
    }

    @Test("certfile and keyfile on a websockets listener make it wss")
    func secureWebSockets() async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        let text = """
            listener 8081
            protocol websockets
            certfile \(pki.path("server.crt"))
            keyfile \(pki.path("server.key"))
            """
        let listener = try #require(BrokerConfigParser.parse(text).configuration.listeners.first)
        #expect(listener.transportProtocol == .websockets)
        #expect(listener.tls?.certificateFile == pki.path("server.crt"))
    }

    @Test("misplaced or inconsistent options, unknown protocols and missing directories name their line")
    func refused() throws {
        let web = try makeTemporaryDirectory(prefix: "ws-config")
        defer { try? FileManager.default.removeItem(at: web) }
        let file = web.appendingPathComponent("index.html")
        try Data("x".utf8).write(to: file)
        let cases: [(String, BrokerConfigError)] = [
            ("protocol websockets\nlistener 9001",
             .invalidListenerSettings(source: "p.conf", line: 1, option: "protocol", reason: "must follow a listener line")),
            ("http_dir \(web.path)\nlistener 9001",
             .invalidListenerSettings(source: "p.conf", line: 1, option: "http_dir", reason: "must follow a listener line")),
            ("listener 9001\nhttp_dir \(web.path)",
             .invalidListenerSettings(
                source: "p.conf", line: 2, option: "http_dir", reason: "needs protocol websockets in the same listener")),
            ("listener 9001\nprotocol mqtt\n\nhttp_dir \(web.path)",
             .invalidListenerSettings(
                source: "p.conf", line: 4, option: "http_dir", reason: "needs protocol websockets in the same listener")),
            // The http_dir belongs to the second listener, which speaks plain MQTT.
            ("listener 9001\nprotocol websockets\nlistener 1883\nhttp_dir \(web.path)",
             .invalidListenerSettings(
                source: "p.conf", line: 4, option: "http_dir", reason: "needs protocol websockets in the same listener")),
            ("listener 9001\nprotocol websocket",
             .invalidValue(source: "p.conf", line: 2, option: "protocol", value: "websocket", expected: "mqtt or websockets")),
            ("listener 9001\nprotocol",
             .missingValue(source: "p.conf", line: 2, option: "protocol")),
            ("listener 9001\nprotocol websockets\nhttp_dir /nonexistent/mqttchat-web",
             .invalidFile(source: "p.conf", line: 3, option: "http_dir", reason: "/nonexistent/mqttchat-web: no such directory")),
            ("listener 9001\nprotocol websockets\nhttp_dir \(file.path)",
             .invalidFile(source: "p.conf", line: 3, option: "http_dir", reason: "\(file.path): no such directory")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try BrokerConfigParser.parse(text, source: "p.conf") }
        }
        #expect(
            BrokerConfigError.invalidListenerSettings(source: "p.conf", line: 2, option: "http_dir", reason: "x").description
                == "p.conf:2: http_dir x")
    }

    @Test("the shipped config adds a websockets listener on 127.0.0.1:8080 serving web/ from the repository root")
    func shippedConfig() throws {
        // http_dir is relative to the working directory (the repository root for scripts/run.sh and `swift test`).
        let listeners = try shippedBrokerSettings().configuration.listeners
        #expect(listeners.count == 2)
        #expect(listeners[0] == .init(host: "127.0.0.1", port: 1883))
        #expect(listeners[1] == .init(host: "127.0.0.1", port: 8080, transportProtocol: .websockets, httpDirectory: "web"))
    }
}
