import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import ServiceLifecycle
import Testing

@testable import MQTTBroker

/// The real server on a real loopback socket, driven by a raw test client and by mosquitto's own tools.
@Suite("MQTTBrokerServer over sockets", .timeLimit(.minutes(1)))
struct LiveBrokerTests {
    @Test("QoS 0, 1 and 2 round trips with the full acknowledgement flows")
    func qosRoundTrips() async throws {
        try await withLiveBroker { _, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "sub"))
            #expect(try await subscriber.subscribe("rt/#", qos: .exactlyOnce).returnCodes == [.granted(.exactlyOnce)])
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))

            try await publisher.send(.publish(PublishPacket(topic: "rt/0", payload: ByteBuffer(string: "zero"))))
            let zero = try await subscriber.nextPublish()
            #expect(zero.qos == .atMostOnce && String(buffer: zero.payload) == "zero")

            try await publisher.send(.publish(PublishPacket(topic: "rt/1", payload: ByteBuffer(string: "one"), qos: .atLeastOnce, packetID: 10)))
            #expect(try await publisher.next() == .puback(PubAckPacket(packetID: 10)))
            let one = try await subscriber.nextPublish()
            #expect(one.qos == .atLeastOnce && String(buffer: one.payload) == "one")

            try await publisher.send(.publish(PublishPacket(topic: "rt/2", payload: ByteBuffer(string: "two"), qos: .exactlyOnce, packetID: 11)))
            #expect(try await publisher.next() == .pubrec(PubRecPacket(packetID: 11)))
            try await publisher.send(.pubrel(PubRelPacket(packetID: 11)))
            #expect(try await publisher.next() == .pubcomp(PubCompPacket(packetID: 11)))
            let two = try await subscriber.nextPublish()
            #expect(two.qos == .exactlyOnce && String(buffer: two.payload) == "two")
            let twoID = try #require(two.packetID)
            #expect(try await subscriber.next() == .pubrel(PubRelPacket(packetID: twoID)))
            try await subscriber.send(.pubcomp(PubCompPacket(packetID: twoID)))

            await publisher.close()
            await subscriber.close()
        }
    }

    @Test("a will is published when the socket closes; takeover closes the old connection and publishes its will")
    func willAndTakeover() async throws {
        try await withLiveBroker { _, address in
            let (watcher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "watcher"))
            _ = try await watcher.subscribe("wills/#", qos: .atLeastOnce)

            let will = ConnectPacket.Will(topic: "wills/a", payload: ByteBuffer(string: "a lost"), qos: .atLeastOnce)
            let (a, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "a", will: will))
            await a.close()
            let first = try await watcher.nextPublish()
            #expect(first.topic == "wills/a" && first.qos == .atLeastOnce)

            let takenWill = ConnectPacket.Will(topic: "wills/b", payload: ByteBuffer(string: "b replaced"))
            let (old, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "b", will: takenWill))
            let (new, connack) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "b"))
            #expect(connack.returnCode == .accepted && !connack.sessionPresent)
            #expect(await old.closedByBroker())
            #expect(String(buffer: try await watcher.nextPublish().payload) == "b replaced")
            try await new.send(.pingreq(PingReqPacket()))
            #expect(try await new.next() == .pingresp(PingRespPacket()))
            await new.close()
            await watcher.close()
        }
    }

    @Test("a malformed packet closes only its own connection while others keep publishing and receiving")
    func malformedPacketIsolation() async throws {
        try await withLiveBroker { _, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "s"))
            _ = try await subscriber.subscribe("chat", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "p"))
            let (bad, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "bad"))

            try await publisher.send(.publish(PublishPacket(topic: "chat", payload: ByteBuffer(string: "before"), qos: .atLeastOnce, packetID: 1)))
            #expect(String(buffer: try await subscriber.nextPublish().payload) == "before")

            // SUBSCRIBE with reserved fixed-header flags 0000 instead of 0010 (MQTT-2.2.2-2).
            try await bad.sendRaw([0x80, 0x06, 0x00, 0x01, 0x00, 0x01, 0x74, 0x00])
            #expect(await bad.closedByBroker())

            for n in 2...4 {
                try await publisher.send(.publish(PublishPacket(topic: "chat", payload: ByteBuffer(string: "after \(n)"), qos: .atLeastOnce, packetID: UInt16(n))))
                #expect(String(buffer: try await subscriber.nextPublish().payload) == "after \(n)")
            }
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test("mosquitto_pub and mosquitto_sub interoperate: QoS 2 delivery and retained messages")
    func mosquittoInterop() async throws {
        try await withLiveBroker { server, address in
            let port = address.portString
            async let subscribed = runProcess(
                "/usr/bin/mosquitto_sub",
                ["-h", "127.0.0.1", "-p", port, "-t", "interop/#", "-q", "2", "-C", "2", "-W", "10", "-F", "%t %q %r %p"]
            )
            #expect(try await server.waitForSubscriptions(1))
            let pub1 = try await runProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", port, "-t", "interop/a", "-q", "2", "-m", "hello"])
            let pub2 = try await runProcess("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", port, "-t", "interop/b", "-q", "1", "-r", "-m", "kept"])
            #expect(pub1.status == 0 && pub2.status == 0)
            let live = try await subscribed
            #expect(live.status == 0)
            #expect(live.output.split(separator: "\n") == ["interop/a 2 0 hello", "interop/b 1 0 kept"])

            // A new subscriber gets the retained message with the retain flag set.
            let late = try await runProcess(
                "/usr/bin/mosquitto_sub",
                ["-h", "127.0.0.1", "-p", port, "-t", "interop/+", "-q", "1", "-C", "1", "-W", "5", "-F", "%t %q %r %p"]
            )
            #expect(late.output.split(separator: "\n") == ["interop/b 1 1 kept"])
        }
    }

    @Test("a burst of QoS 1 messages from mosquitto_pub -l reaches mosquitto_sub complete and in order")
    func qos1BurstThroughInflightWindow() async throws {
        try await withLiveBroker({ $0.maxInflightMessages = 10 }) { server, address in
            let port = address.portString
            let count = 500
            let lines = (1...count).map { "m\($0)" }.joined(separator: "\n") + "\n"
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("burst-\(UUID().uuidString).txt")
            try lines.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            async let subscribed = runProcess(
                "/usr/bin/mosquitto_sub",
                ["-h", "127.0.0.1", "-p", port, "-t", "burst", "-q", "1", "-C", "\(count)", "-W", "20"],
                timeout: .seconds(25)
            )
            #expect(try await server.waitForSubscriptions(1))
            let published = try await runProcess(
                "/bin/sh", ["-c", "/usr/bin/mosquitto_pub -h 127.0.0.1 -p \(port) -t burst -q 1 -l < \(file.path)"],
                timeout: .seconds(25)
            )
            #expect(published.status == 0)
            let received = try await subscribed
            #expect(received.output.split(separator: "\n").map(String.init) == (1...count).map { "m\($0)" })
        }
    }

    @Test("a socket that never sends CONNECT is closed after the connect timeout")
    func connectTimeoutLive() async throws {
        try await withLiveBroker({ $0.connectTimeout = .milliseconds(200) }) { _, address in
            let idle = try await LiveClient.open(to: address)
            #expect(await idle.closedByBroker(within: .seconds(3)))
        }
    }

    @Test("run() serves until cancelled, then closes every connection and returns")
    func runUntilCancelled() async throws {
        var configuration = BrokerConfiguration()
        configuration.listeners = [.init(host: "127.0.0.1", port: 0), .init(host: "127.0.0.1", port: 0)]
        configuration.sysInterval = .milliseconds(50)
        let server = MQTTBrokerServer(configuration: configuration)
        let addresses = try await server.start()
        #expect(addresses.count == 2)
        #expect(addresses[0].port != 0 && addresses[0].port != addresses[1].port)

        let running = Task { try await server.run() }
        let (client, connack) = try await LiveClient.connect(to: addresses[1], ConnectPacket(clientIdentifier: "c"))
        #expect(connack.returnCode == .accepted)
        // $SYS is published periodically while running.
        _ = try await client.subscribe("$SYS/broker/uptime", qos: .atMostOnce)
        #expect(try await client.nextPublish().topic == "$SYS/broker/uptime")

        running.cancel()
        try await running.value
        #expect(await client.closedByBroker())
        await #expect(throws: (any Error).self) { try await LiveClient.open(to: addresses[0]) }
        await server.shutdown()  // idempotent
    }
}
