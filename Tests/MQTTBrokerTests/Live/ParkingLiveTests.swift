import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Parking idle connections over real sockets: a connection that has been quiet for the parking delay gives up its
/// NIO channel, and everything the client can observe stays the same: messages to it arrive, its pings are
/// answered, its will is published when it vanishes, its keepalive still expires.
@Suite("Parking idle connections", .timeLimit(.minutes(1)))
struct ParkingLiveTests {
    /// A short delay, so tests wait tens of milliseconds for a connection to park.
    static let delay: TimeAmount = .milliseconds(40)

    /// Waits (bounded) until `condition` holds on the broker core.
    func eventually(
        _ server: MQTTBrokerServer, timeout: Duration = .seconds(5),
        _ condition: @escaping @Sendable (BrokerCore) -> Bool
    ) async throws -> Bool {
        try await poll(every: .milliseconds(10), for: timeout) { try await server.withCore(condition) == true }
    }

    /// A broker that parks after ``delay``. Parking gives up SwiftNIO channels, so the broker serves its sockets
    /// with SwiftNIO even on one loop (where it would otherwise use its own epoll loop, which parks nothing).
    func parkingBroker<T>(
        loops: Int = 1, _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
    ) async throws -> T {
        try await withLiveBroker(
            loops: loops,
            {
                $0.parkIdleConnectionsAfter = Self.delay
                $0.socketEngine = .swiftNIO
            }, body)
    }

    @Test("an idle subscriber parks, and a message to it brings it back and arrives", arguments: [1, 3])
    func messageToParkedSubscriber(loops: Int) async throws {
        try await parkingBroker(loops: loops) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "sub"))
            #expect(try await subscriber.subscribe("room/#", qos: .atLeastOnce).returnCodes == [.granted(.atLeastOnce)])
            #expect(try await eventually(server) { $0.parkedConnections.count == 1 })

            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            for round in 1...3 {
                // Both park between rounds; each round brings both back, by a read and by a write.
                #expect(try await eventually(server) { $0.parkedConnections.count == 2 })
                try await publisher.send(
                    .publish(PublishPacket(topic: "room/a", payload: ByteBuffer(string: "m\(round)"), qos: .atLeastOnce, packetID: UInt16(round))))
                #expect(try await publisher.next() == .puback(PubAckPacket(packetID: UInt16(round))))
                let delivered = try await subscriber.nextPublish()  // acknowledged by nextPublish
                #expect(String(buffer: delivered.payload) == "m\(round)")
            }
            let counts = try await server.withCore { $0.parkCounts }
            #expect((counts?.parked ?? 0) >= 6)
            #expect((counts?.unparked ?? 0) >= 6)
            await subscriber.close()
            await publisher.close()
        }
    }

    @Test("a parked client's PINGREQ is answered")
    func pingWhileParked() async throws {
        try await parkingBroker { server, address in
            let (client, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 30, clientIdentifier: "pinger"))
            for _ in 1...3 {
                #expect(try await eventually(server) { $0.parkedConnections.count == 1 })
                try await client.send(.pingreq(PingReqPacket()))
                #expect(try await client.next() == .pingresp(PingRespPacket()))
            }
            await client.close()
        }
    }

    @Test("a parked client that drops its socket gets its will published")
    func willOfVanishedParkedClient() async throws {
        try await parkingBroker { server, address in
            let (watcher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "watcher"))
            _ = try await watcher.subscribe("wills/#", qos: .atMostOnce)
            let will = ConnectPacket.Will(topic: "wills/gone", payload: ByteBuffer(string: "bye"), qos: .atMostOnce, retain: false)
            let (client, _) = try await LiveClient.connect(
                to: address, ConnectPacket(keepAliveSeconds: 30, clientIdentifier: "gone", will: will))
            #expect(try await eventually(server) { $0.parkedConnections.count == 2 })
            await client.close()  // no DISCONNECT: the will is due
            let published = try await watcher.nextPublish()
            #expect(published.topic == "wills/gone")
            #expect(String(buffer: published.payload) == "bye")
            #expect(try await eventually(server) { $0.connections.count == 1 })
            await watcher.close()
        }
    }

    @Test("the keepalive of a parked client that goes silent still expires")
    func keepaliveExpiresWhileParked() async throws {
        try await parkingBroker { server, address in
            let (client, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 1, clientIdentifier: "silent"))
            #expect(try await eventually(server) { $0.parkedConnections.count == 1 })
            // Keepalive 1 s: closed after 1.5 s of silence.
            #expect(await client.closedByBroker(within: .seconds(4)))
            #expect(try await eventually(server) { $0.parkedConnections.isEmpty && $0.connections.isEmpty })
        }
    }

    @Test("a QoS 2 publish whose PUBREL comes after a park is delivered exactly once")
    func qos2HandshakeAcrossPark() async throws {
        try await parkingBroker { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "sub2"))
            _ = try await subscriber.subscribe("q2/#", qos: .exactlyOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub2"))
            try await publisher.send(
                .publish(PublishPacket(topic: "q2/a", payload: ByteBuffer(string: "once"), qos: .exactlyOnce, packetID: 7)))
            guard case .pubrec(let pubrec) = try await publisher.next() else {
                Issue.record("expected PUBREC")
                return
            }
            #expect(pubrec.packetID == 7)
            // The publisher parks holding the packet id; a duplicate and the PUBREL come after.
            #expect(try await eventually(server) { $0.parkedConnections.count >= 1 && $0.parkCounts.parked >= 1 })
            try await Task.sleep(for: .milliseconds(3 * 40))
            try await publisher.send(
                .publish(PublishPacket(topic: "q2/a", payload: ByteBuffer(string: "once"), qos: .exactlyOnce, dup: true, packetID: 7)))
            guard case .pubrec = try await publisher.next() else {
                Issue.record("expected PUBREC for the duplicate")
                return
            }
            try await publisher.send(.pubrel(PubRelPacket(packetID: 7)))
            guard case .pubcomp(let pubcomp) = try await publisher.next() else {
                Issue.record("expected PUBCOMP")
                return
            }
            #expect(pubcomp.packetID == 7)
            // Exactly one delivery, through the subscriber's own QoS 2 handshake (nextPublish sends the PUBREC).
            let delivered = try await subscriber.nextPublish()
            #expect(String(buffer: delivered.payload) == "once")
            guard case .pubrel = try await subscriber.next() else {
                Issue.record("expected PUBREL")
                return
            }
            try await subscriber.send(.pubcomp(PubCompPacket(packetID: delivered.packetID ?? 0)))
            await #expect(throws: (any Error).self) { try await subscriber.next(timeout: .milliseconds(300)) }
            await subscriber.close()
            await publisher.close()
        }
    }

    @Test("a client id taken over from a parked connection closes the parked socket")
    func takeoverOfParked() async throws {
        try await parkingBroker { server, address in
            let (first, _) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "same"))
            #expect(try await eventually(server) { $0.parkedConnections.count == 1 })
            let (second, connack) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "same"))
            #expect(connack.returnCode == .accepted)
            #expect(connack.sessionPresent)
            #expect(await first.closedByBroker(within: .seconds(3)))
            #expect(try await eventually(server) { $0.connections.count == 1 })
            await second.close()
        }
    }

    @Test("with parking off no connection parks")
    func parkingOff() async throws {
        try await withLiveBroker({ $0.parkIdleConnectionsAfter = nil }) { server, address in
            let (client, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "stays"))
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await server.withCore { $0.parkCounts } == ParkCounts())
            try await client.send(.pingreq(PingReqPacket()))
            #expect(try await client.next() == .pingresp(PingRespPacket()))
            await client.close()
        }
    }

    @Test("shutdown closes parked connections")
    func shutdownClosesParked() async throws {
        var clients: [LiveClient] = []
        try await parkingBroker { server, address in
            for index in 0..<5 {
                clients.append(try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "c\(index)")).0)
            }
            #expect(try await eventually(server) { $0.parkedConnections.count == 5 })
            await server.shutdown()
            for client in clients {
                #expect(await client.closedByBroker(within: .seconds(3)))
            }
        }
    }
}
