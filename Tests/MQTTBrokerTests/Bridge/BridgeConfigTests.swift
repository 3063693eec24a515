import MQTTCore
import Testing

@testable import MQTTBroker

@Suite("Bridge configuration")
struct BridgeConfigTests {
    @Test("a connection block takes mosquitto's keys")
    func parsesBlock() throws {
        let text = """
            listener 1883
            connection up
            address broker.example:8883 [::1]:1884
            address other
            topic sensors/# out 1 local/ remote/
            topic cmd/+ in 2
            topic "" both 0 a/b c/d
            remote_clientid edge-1
            remote_username u
            remote_password p
            local_clientid edge-local
            cleansession true
            bridge_protocol_version mqttv50
            try_private false
            notifications false
            notification_topic bridges/up/state
            restart_timeout 2 30
            keepalive_interval 20
            bridge_cafile /ca.pem
            bridge_certfile /c.pem
            bridge_keyfile /k.pem
            bridge_insecure true
            """
        let settings = try BrokerConfigParser.parse(text, source: "t")
        let bridge = try #require(settings.configuration.bridges.first)
        #expect(settings.configuration.bridges.count == 1)
        #expect(bridge.name == "up")
        #expect(
            bridge.addresses == [
                .init(host: "broker.example", port: 8883), .init(host: "::1", port: 1884), .init(host: "other"),
            ])
        #expect(
            bridge.topics == [
                BridgeTopic(pattern: "sensors/#", direction: .out, qos: .atLeastOnce, localPrefix: "local/", remotePrefix: "remote/"),
                BridgeTopic(pattern: "cmd/+", direction: .in, qos: .exactlyOnce),
                BridgeTopic(pattern: "", direction: .both, qos: .atMostOnce, localPrefix: "a/b", remotePrefix: "c/d"),
            ])
        #expect(bridge.remoteClientID == "edge-1" && bridge.remoteUsername == "u" && bridge.remotePassword == "p")
        #expect(bridge.localClientID == "edge-local")
        #expect(bridge.cleanSession && !bridge.tryPrivate && !bridge.notifications)
        #expect(bridge.protocolVersion == .v5)
        #expect(bridge.resolvedNotificationTopic(hostName: "h") == "bridges/up/state")
        #expect(bridge.restartTimeout == .backoff(base: 2, cap: 30))
        #expect(bridge.keepaliveSeconds == 20)
        #expect(bridge.tls == .init(caFile: "/ca.pem", certificateFile: "/c.pem", keyFile: "/k.pem", insecure: true))
    }

    @Test("defaults follow mosquitto: out, QoS 0, try_private, notifications, HOSTNAME.NAME")
    func defaults() throws {
        let settings = try BrokerConfigParser.parse("connection b\naddress 127.0.0.1\ntopic x\ntopic #", source: "t")
        let bridge = try #require(settings.configuration.bridges.first)
        #expect(bridge.topics == [BridgeTopic(pattern: "x"), BridgeTopic(pattern: "#")])
        #expect(bridge.addresses == [.init(host: "127.0.0.1", port: 1883)])
        #expect(bridge.tryPrivate && bridge.notifications && !bridge.cleanSession)
        #expect(bridge.protocolVersion == .v3_1_1)
        #expect(bridge.restartTimeout == .doubling(initial: 1, maximum: 64))
        #expect(bridge.resolvedRemoteClientID(hostName: "h") == "h.b")
        #expect(bridge.resolvedLocalClientID(hostName: "h") == "local.h.b")
        #expect(bridge.resolvedNotificationTopic(hostName: "h") == "$SYS/broker/connection/h.b/state")
    }

    @Test("the shipped broker-config/bridge-example.conf parses to one bridge")
    func shippedExample() throws {
        let settings = try BrokerConfigParser.load(path: shippedConfigPath("bridge-example.conf"))
        let bridge = try #require(settings.configuration.bridges.first)
        #expect(settings.configuration.bridges.count == 1 && bridge.name == "cloud")
        #expect(bridge.addresses.count == 2 && bridge.topics.count == 4)
        #expect(bridge.topics[0].localFilter == "site-a/sensors/#")
        #expect(bridge.topics[3].remoteTopic(forLocal: "status") == "edge/a/status")
    }

    @Test("restart_timeout with one value is constant")
    func constantRestart() throws {
        let settings = try BrokerConfigParser.parse(
            "connection b\naddress h\ntopic x\nrestart_timeout 7", source: "t")
        #expect(settings.configuration.bridges.first?.restartTimeout == .constant(seconds: 7))
    }

    @Test("malformed bridge configuration is refused", arguments: [
        "address h",  // before any connection
        "connection b\ntopic x",  // no address
        "connection b\naddress h",  // no topic
        "connection b\naddress h:99999\ntopic x",
        "connection b\naddress h\ntopic x sideways",
        "connection b\naddress h\ntopic x out 3",
        "connection b\naddress h\ntopic x out 0 a/+ b/",
        "connection b\naddress h\ntopic \"\" out 0 a/",
        "connection b\naddress h\ntopic x\nbridge_protocol_version mqttv31",
        "connection b\naddress h\ntopic x\nbridge_certfile /c.pem",
        "connection b\naddress h\ntopic x\nconnection b\naddress h\ntopic y",
        "connection b\naddress h\ntopic x\nbridge_psk 00",
    ])
    func refused(text: String) {
        #expect(throws: BrokerConfigError.self) { try BrokerConfigParser.parse(text, source: "t") }
    }

    @Test("topics remap by swapping prefixes, as mosquitto does")
    func remapping() {
        let topic = BridgeTopic(pattern: "sensors/#", direction: .both, localPrefix: "local/", remotePrefix: "remote/")
        #expect(topic.localFilter == "local/sensors/#")
        #expect(topic.remoteFilter == "remote/sensors/#")
        #expect(topic.remoteTopic(forLocal: "local/sensors/t1") == "remote/sensors/t1")
        #expect(topic.localTopic(forRemote: "remote/sensors/t1") == "local/sensors/t1")
        #expect(topic.remoteTopic(forLocal: "other/sensors/t1") == nil)
        let whole = BridgeTopic(pattern: "", direction: .out, localPrefix: "a/b", remotePrefix: "c/d")
        #expect(whole.remoteTopic(forLocal: "a/b") == "c/d")
        #expect(whole.remoteTopic(forLocal: "a/b/c") == nil)
        let plain = BridgeTopic(pattern: "x/+/z")
        #expect(plain.remoteTopic(forLocal: "x/y/z") == "x/y/z")
        #expect(TopicMatcher.matches(topic: "$SYS/x", filter: "#") == false)
        #expect(TopicMatcher.matches(topic: "a", filter: "a/#"))
    }

    @Test("mosquitto's base/cap backoff stays between base and cap, and grows")
    func decorrelatedJitter() {
        var backoff = BridgeBackoff(.backoff(base: 5, cap: 30), seed: 7)
        let delays = (0..<20).map { _ in Double(backoff.next().nanoseconds) / 1e9 }
        #expect(delays.allSatisfy { $0 >= 5 && $0 <= 30 }, "\(delays)")
        #expect(delays.contains { $0 > 10 })
        backoff.reset()
        let first = backoff.next()
        #expect(first >= .seconds(5) && first <= .seconds(15))  // the first draw: base to 3 × base
    }

    @Test("the default doubles from 1 s to 64 s with jitter; constant stays constant")
    func backoff() {
        var backoff = BridgeBackoff(.doubling(initial: 1, maximum: 64), seed: 42)
        let delays = (0..<9).map { _ in Double(backoff.next().nanoseconds) / 1e9 }
        let bases: [Double] = [1, 2, 4, 8, 16, 32, 64, 64, 64]
        for (delay, base) in zip(delays, bases) {
            #expect(delay >= base * 0.8 && delay <= base * 1.2, "\(delay) for \(base)")
        }
        backoff.reset()
        #expect(backoff.next().nanoseconds <= 1_200_000_000)
        var constant = BridgeBackoff(.constant(seconds: 5), seed: 1)
        #expect(constant.next() == .seconds(5) && constant.next() == .seconds(5))
    }
}
