import LiveTestSupport
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Our in-process broker bridged to a real mosquitto (spawned by LiveTestSupport), over loopback sockets: the
/// bridge's own event loop path, in `swift test`. The e2e tests (Tests/e2e/test_bridge*.py) cover the rest.
@Suite("Bridge to mosquitto (live)", .enabled(if: mosquittoBinary != nil), .timeLimit(.minutes(1)))
struct BridgeLiveTests {
    static func bridge(to port: Int) -> BridgeConfiguration {
        var bridge = BridgeConfiguration(name: "live")
        bridge.addresses = [.init(host: "127.0.0.1", port: port)]
        bridge.remoteClientID = "live-bridge"
        bridge.topics = [
            BridgeTopic(pattern: "up/#", direction: .out, qos: .atLeastOnce, localPrefix: "l/", remotePrefix: "r/"),
            BridgeTopic(pattern: "down/#", direction: .in, qos: .atLeastOnce, localPrefix: "l/", remotePrefix: "r/"),
        ]
        bridge.restartTimeout = .constant(seconds: 1)
        return bridge
    }

    /// Waits (bounded) for the retained notification on our broker to read `value`.
    static func waitForState(_ value: String, at address: SocketAddress) async throws {
        let (watcher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "state-watch"))
        _ = try await watcher.subscribe("$SYS/broker/connection/live-bridge/state", qos: .atMostOnce)
        var seen = false
        for _ in 0..<10 where !seen {
            let state = try? await watcher.nextPublish(timeout: .seconds(5))
            seen = state.map { String(buffer: $0.payload) == value } ?? false
        }
        await watcher.close()
        #expect(seen, "the bridge state never became \(value)")
    }

    @Test("messages cross to mosquitto and back with their prefixes remapped; the state is 1")
    func crossesBothWays() async throws {
        try await withBroker(.mosquitto) { remote in
            let remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: remote.port)
            try await withInProcessBroker({ $0.bridges = [Self.bridge(to: remote.port)] }) { _, address in
                try await Self.waitForState("1", at: address)
                let (remoteSubscriber, _) = try await LiveClient.connect(
                    to: remoteAddress, ConnectPacket(clientIdentifier: "remote-sub"))
                _ = try await remoteSubscriber.subscribe("r/up/#", qos: .atLeastOnce)
                let (localPublisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
                try await localPublisher.send(
                    .publish(PublishPacket(topic: "l/up/a", payload: ByteBuffer(string: "out"), qos: .atLeastOnce, packetID: 1)))
                #expect(try await localPublisher.next() == .puback(PubAckPacket(packetID: 1)))
                let crossed = try await remoteSubscriber.nextPublish()
                #expect(crossed.topic == "r/up/a" && String(buffer: crossed.payload) == "out")

                let (localSubscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "sub"))
                _ = try await localSubscriber.subscribe("l/down/#", qos: .atMostOnce)
                let (remotePublisher, _) = try await LiveClient.connect(
                    to: remoteAddress, ConnectPacket(clientIdentifier: "remote-pub"))
                // The bridge's SUBSCRIBE on mosquitto may follow the state by a moment: publish until one crosses.
                var received: PublishPacket?
                for attempt in 0..<10 where received == nil {
                    try await remotePublisher.send(
                        .publish(PublishPacket(topic: "r/down/b", payload: ByteBuffer(string: "in\(attempt)"))))
                    received = try? await localSubscriber.nextPublish(timeout: .seconds(1))
                }
                #expect(received?.topic == "l/down/b")
                for client in [remoteSubscriber, localPublisher, localSubscriber, remotePublisher] { await client.close() }
            }
        }
    }

    @Test("the state falls to 0 when the remote stops, and the bridge comes back when it returns")
    func followsTheRemote() async throws {
        try await withBroker(.mosquitto) { remote in
            try await withInProcessBroker({ $0.bridges = [Self.bridge(to: remote.port)] }) { _, address in
                try await Self.waitForState("1", at: address)
                await remote.stop()
                try await Self.waitForState("0", at: address)
                try await remote.restart()
                try await Self.waitForState("1", at: address)
            }
        }
    }
}
