import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Publisher back-pressure over real sockets, with the socket on the core's loop (1 loop) and relayed from another
/// loop (2 loops): a publisher that fills an online subscriber's queue is no longer read instead of having its
/// messages dropped, and a subscriber that stops acknowledging releases it after the stall timeout.
@Suite("Flow control (live)", .timeLimit(.minutes(1)))
struct FlowControlLiveTests {
    static let messageCount = 40

    func configure(stall: TimeAmount, loops: Int) -> (inout BrokerConfiguration) -> Void {
        { config in
            config.maxInflightMessages = 1
            config.maxQueuedMessages = 10
            config.backpressureStallTimeout = stall
            config.eventLoopCount = loops
        }
    }

    /// Sends `count` QoS 1 PUBLISHes in one write (ids 1...count, payload = index).
    func flood(_ publisher: LiveClient, topic: String, count: Int) async throws {
        try await writeBatch(publisher, (0..<count).map { index in
            .publish(PublishPacket(
                topic: topic, payload: ByteBuffer(string: "\(index)"), qos: .atLeastOnce, packetID: UInt16(index + 1)))
        })
    }

    /// Sends `packets` in one write.
    func writeBatch(_ client: LiveClient, _ packets: [MQTTPacket]) async throws {
        var buffer = client.channel.allocator.buffer(capacity: packets.count * 32)
        for packet in packets {
            try MQTTPacketEncoder.encode(packet, into: &buffer)
        }
        try await client.channel.writeAndFlush(buffer)
    }

    /// Counts PUBACKs until none arrives for `quiet`.
    func countAcks(_ client: LiveClient, quiet: TimeAmount) async -> Int {
        var acks = 0
        while let packet = try? await client.next(timeout: quiet) {
            if case .puback = packet { acks += 1 }
        }
        return acks
    }

    @Test("a subscriber that acknowledges late loses nothing: the publisher waits instead", arguments: [1, 2])
    func publisherWaitsForSubscriber(loops: Int) async throws {
        try await withLiveBroker(configure(stall: .seconds(10), loops: loops)) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "slow-sub"))
            _ = try await subscriber.subscribe("flow/t", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "fast-pub"))
            try await flood(publisher, topic: "flow/t", count: Self.messageCount)

            // The subscriber has not acknowledged anything: 1 in flight, the queue a little above half of 10.
            let early = await countAcks(publisher, quiet: .milliseconds(300))
            #expect(early < Self.messageCount)
            // On a loaded machine the flood may still be being read when the acknowledgements go quiet: the pause
            // is awaited (bounded), not assumed to have happened within the quiet period.
            let publisherPaused = try await poll(every: .milliseconds(20), for: .seconds(5)) {
                try await server.withCore { $0.backpressuredConnectionCount } == 1
            }
            #expect(publisherPaused)

            // Now it reads and acknowledges: everything arrives, in order, nothing dropped.
            var received: [String] = []
            for _ in 0..<Self.messageCount {
                received.append(String(buffer: try await subscriber.nextPublish().payload))
            }
            #expect(received == (0..<Self.messageCount).map(String.init))
            let late = await countAcks(publisher, quiet: .milliseconds(300))
            #expect(early + late == Self.messageCount)
            let (dropped, paused, pauses) = try await server.withCore {
                ($0.statistics.publishDropped, $0.backpressuredConnectionCount, $0.backpressurePauseCount)
            } ?? (1, 1, 0)
            #expect(dropped == 0)
            #expect(paused == 0)
            #expect(pauses >= 1)
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test("a paused QoS 2 publisher still gets its PUBCOMPs and PINGRESP while its next PUBLISH waits", arguments: [1, 2])
    func pausedPublisherIsStillAnswered(loops: Int) async throws {
        try await withLiveBroker(configure(stall: .seconds(10), loops: loops)) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "slow-sub"))
            _ = try await subscriber.subscribe("flow/t", qos: .exactlyOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            // 7 QoS 2 publishes: 1 in flight and 6 queued, the last one above half of 10: the publisher is paused
            // by the last of them, so none is left waiting.
            try await writeBatch(publisher, (UInt16(1)...7).map { id in
                .publish(PublishPacket(topic: "flow/t", payload: ByteBuffer(string: "\(id)"), qos: .exactlyOnce, packetID: id))
            })
            var recs: [UInt16] = []
            while recs.count < 7, case .pubrec(let rec) = try await publisher.next() { recs.append(rec.packetID) }
            #expect(recs == Array(1...7))
            #expect(try await server.withCore { $0.backpressuredConnectionCount } == 1)
            // Paused: its releases and a ping are answered over the socket; the PUBLISH after them waits.
            let waiting = PublishPacket(topic: "flow/t", payload: ByteBuffer(string: "8"), qos: .exactlyOnce, packetID: 8)
            try await writeBatch(
                publisher,
                (UInt16(1)...7).map { .pubrel(PubRelPacket(packetID: $0)) } + [.pingreq(PingReqPacket()), .publish(waiting)])
            var comps: [UInt16] = []
            var pinged = false
            while comps.count < 7 || !pinged {
                switch try await publisher.next() {
                case .pubcomp(let comp): comps.append(comp.packetID)
                case .pingresp: pinged = true
                case let other: Issue.record("unexpected \(other)")
                }
            }
            #expect(comps == Array(1...7))
            #expect(try await server.withCore { $0.backpressuredConnectionCount } == 1)
            // The subscriber drains: the waiting PUBLISH goes in, all eight arrive in order, nothing dropped.
            var received: [String] = []
            for _ in 0..<8 {
                let publish = try await subscriber.nextPublish()
                received.append(String(buffer: publish.payload))
                guard case .pubrel(let rel) = try await subscriber.next() else { break }
                try await subscriber.send(.pubcomp(PubCompPacket(packetID: rel.packetID)))
            }
            #expect(received == (1...8).map(String.init))
            guard case .pubrec(let rec) = try await publisher.next() else {
                Issue.record("no PUBREC for the waiting publish")
                return
            }
            #expect(rec.packetID == 8)
            #expect(try await server.withCore { $0.statistics.publishDropped } == 0)
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test("a subscriber that never acknowledges releases the publisher after the stall timeout; its queue drops")
    func stalledSubscriberReleasesPublisher() async throws {
        try await withLiveBroker(configure(stall: .milliseconds(300), loops: 2)) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "stuck-sub"))
            _ = try await subscriber.subscribe("flow/t", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            try await flood(publisher, topic: "flow/t", count: Self.messageCount)
            // Paused at first, then released: every publish is acknowledged within a few stall timeouts.
            let acks = await countAcks(publisher, quiet: .milliseconds(1500))
            #expect(acks == Self.messageCount)
            let (queueFull, paused) = try await server.withCore {
                ($0.statistics.publishDroppedQueueFull, $0.backpressuredConnectionCount)
            } ?? (0, 1)
            // 1 in flight + 10 queued; the rest dropped and counted.
            #expect(queueFull == UInt64(Self.messageCount - 11))
            #expect(paused == 0)
            await publisher.close()
            await subscriber.close()
        }
    }
}

extension FlowControlLiveTests {
    @Test("a persistent session on a persistent broker that acknowledges slowly keeps holding the publisher back")
    func persistentSessionProgressKeepsBackpressure() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqttchat-flow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = 60
        try await withLiveBroker({ config in
            self.configure(stall: .milliseconds(400), loops: 1)(&config)
            config.persistence = PersistenceConfiguration(directory: directory.path)
        }) { server, address in
            let (subscriber, _) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "slow-persistent-sub"))
            _ = try await subscriber.subscribe("flow/p", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            // A publisher with a window of 5 unacknowledged messages, like a real client: with persistence a
            // publish is routed (and paused on) only once its batch is synced, so an unbounded pipeline would be
            // accepted before the first pause; a window bounds what arrives meanwhile.
            async let acknowledged = publishWindowed(publisher, topic: "flow/p", count: count, window: 5)
            // One acknowledgement every 40 ms: well inside the stall timeout each time, yet the whole drain
            // (about 2.4 s) lasts six stall timeouts. Progress must keep the publisher paused, not released.
            var received: [String] = []
            for _ in 0..<count {
                try await Task.sleep(for: .milliseconds(40))
                received.append(String(buffer: try await subscriber.nextPublish().payload))
            }
            #expect(try await acknowledged == count)
            #expect(received == (0..<count).map(String.init))
            let dropped = try await server.withCore { $0.statistics.publishDropped } ?? 1
            #expect(dropped == 0)
            await publisher.close()
            await subscriber.close()
        }
    }

    /// Publishes `count` QoS 1 messages keeping at most `window` unacknowledged; returns the PUBACKs received.
    func publishWindowed(_ publisher: LiveClient, topic: String, count: Int, window: Int) async throws -> Int {
        var acknowledged = 0
        for index in 0..<count {
            while index - acknowledged >= window {
                if case .puback = try await publisher.next(timeout: .seconds(10)) { acknowledged += 1 }
            }
            try await publisher.send(
                .publish(PublishPacket(
                    topic: topic, payload: ByteBuffer(string: "\(index)"), qos: .atLeastOnce, packetID: UInt16(index + 1))))
        }
        while acknowledged < count {
            if case .puback = try await publisher.next(timeout: .seconds(10)) { acknowledged += 1 }
        }
        return acknowledged
    }
}
