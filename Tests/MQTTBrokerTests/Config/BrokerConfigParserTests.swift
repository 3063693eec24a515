import Foundation
import MQTTBroker
import MQTTCore
import NIOCore
import Testing

@Suite("Broker config parser")
struct BrokerConfigParserTests {
    @Test("an empty file gives the defaults: loopback 1883, anonymous allowed")
    func defaults() throws {
        let settings = try BrokerConfigParser.parse("")
        #expect(settings.configuration.listeners == [.init(host: "127.0.0.1", port: 1883)])
        #expect(settings.configuration.allowAnonymous)
        #expect(settings.configuration.socketEngine == .automatic)
        #expect(settings.logLevel == .info)
    }

    @Test("a file with Windows line endings parses line by line, as mosquitto reads it")
    func windowsLineEndings() throws {
        let settings = try BrokerConfigParser.parse("max_inflight_messages 5\r\nlistener 18830\r\nmax_qos 1\r\n")
        #expect(settings.configuration.listeners.map(\.port) == [18830])
        #expect(settings.configuration.maxInflightMessages == 5)
        #expect(settings.configuration.maxQoS == .atLeastOnce)
    }

    @Test("every supported option is applied")
    func options() throws {
        let text = """
            # comment line
            listener 0
            listener 18830 0.0.0.0   # trailing comment
            allow_anonymous false
            max_inflight_messages 5
            max_queued_messages 7
            max_packet_size 1024
            message_size_limit 512
            max_qos 1
            retain_available false
            sys_interval 0
            max_keepalive 120
            max_topic_levels 16
            threads 3
            socket_engine nio
            connect_timeout 3
            persistence false
            log_dest stdout
            log_type warning
            log_type debug
            """
        let settings = try BrokerConfigParser.parse(text)
        let config = settings.configuration
        #expect(config.listeners == [.init(host: "127.0.0.1", port: 0), .init(host: "0.0.0.0", port: 18830)])
        #expect(config.allowAnonymous == false)
        #expect(config.maxInflightMessages == 5)
        #expect(config.maxQueuedMessages == 7)
        #expect(config.maxPacketSize == 1024)
        #expect(config.messageSizeLimit == 512)
        #expect(config.maxQoS == .atLeastOnce)
        #expect(config.retainAvailable == false)
        #expect(config.sysInterval == nil)
        #expect(config.maxKeepalive == 120)
        #expect(config.maxTopicLevels == 16)
        #expect(config.eventLoopCount == 3)
        #expect(config.socketEngine == .swiftNIO)
        #expect(config.connectTimeout == .seconds(3))
        #expect(settings.logDestination == .stdout)
        #expect(settings.logLevel == .debug)
    }

    @Test("errors name the file, line and option")
    func errors() {
        let cases: [(String, BrokerConfigError)] = [
            ("bogus 1", .unknownOption(source: "t", line: 1, option: "bogus")),
            ("\ncapath /x", .unsupportedOption(source: "t", line: 2, option: "capath")),
            (
                "persistence true",
                .missingValue(source: "t", line: 1, option: "persistence_location (needed by persistence true)")
            ),
            ("persistence_file x.db", .unsupportedOption(source: "t", line: 1, option: "persistence_file")),
            ("listener", .missingValue(source: "t", line: 1, option: "listener")),
            ("max_qos 1 2", .extraValues(source: "t", line: 1, option: "max_qos")),
            ("max_qos 3", .invalidValue(source: "t", line: 1, option: "max_qos", value: "3", expected: "an integer in 0...2")),
            ("listener 70000", .invalidValue(source: "t", line: 1, option: "listener", value: "70000", expected: "an integer in 0...65535")),
            ("allow_anonymous yes", .invalidValue(source: "t", line: 1, option: "allow_anonymous", value: "yes", expected: "true or false")),
            ("socket_engine epoll", .invalidValue(source: "t", line: 1, option: "socket_engine", value: "epoll", expected: "auto or nio")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try BrokerConfigParser.parse(text, source: "t") }
        }
    }

    @Test("persistence options in any order build the persistence configuration; off unless persistence true")
    func persistenceOptions() throws {
        let on = try BrokerConfigParser.parse(
            "autosave_interval 60\npersistence_location /tmp/p\npersistence true\npersistence_recover_partial true")
        #expect(
            on.configuration.persistence
                == PersistenceConfiguration(directory: "/tmp/p", autosaveInterval: .seconds(60), recoverPartial: true))
        let sizeOnly = try BrokerConfigParser.parse("persistence true\npersistence_location /tmp/p\nautosave_interval 0")
        #expect(sizeOnly.configuration.persistence?.autosaveInterval == nil)
        #expect(sizeOnly.configuration.persistence?.recoverPartial == false)
        let off = try BrokerConfigParser.parse("persistence false\npersistence_location /tmp/p")
        #expect(off.configuration.persistence == nil)
    }

    @Test("the shipped broker-config/mqttchat.conf parses to loopback-only listeners")
    func shippedConfig() throws {
        let settings = try shippedBrokerSettings()
        #expect(settings.configuration.listeners == [
            .init(host: "127.0.0.1", port: 1883),
            .init(host: "127.0.0.1", port: 8080, transportProtocol: .websockets, httpDirectory: "web"),
        ])
        #expect(settings.configuration.maxInflightMessages == 20)
        #expect(settings.configuration.sysInterval == .seconds(10))
    }

    @Test("a missing file is a clear error")
    func missingFile() {
        #expect(throws: BrokerConfigError.self) { try BrokerConfigParser.load(path: "/nonexistent/mqttchat.conf") }
    }
}
