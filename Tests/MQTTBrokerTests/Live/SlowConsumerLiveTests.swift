import Foundation
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

#if canImport(Glibc)
import Glibc
#endif

/// The pending-output bound over real sockets: a subscriber that stops reading fills the kernel's buffers, then the
/// broker's own queue for it, and from `max_pending_output_bytes` on its QoS 0 copies are dropped while a subscriber
/// that reads keeps receiving. This depends on the broker learning, flush by flush, what the kernel did not take
/// (for a socket on the core's loop, from its writability right after the flush). Run with one event loop and two.
@Suite("Slow consumers (live)", .timeLimit(.minutes(1)))
struct SlowConsumerLiveTests {
    static let payloadSize = 1024
    /// 12 MiB of payload: more than the kernel buffers between the broker and a client that does not read.
    static let messageCount = 12 * 1024

    @Test("a subscriber that stops reading has its QoS 0 copies dropped; one that reads keeps receiving", arguments: [1, 2])
    func nonReadingSubscriberIsBounded(loops: Int) async throws {
        try await withLiveBroker({ config in
            config.maxPendingOutputBytes = 64 * 1024
            config.slowConsumerTimeout = nil
            config.eventLoopCount = loops
        }) { server, address in
            let port = try #require(address.port)
            // Sends CONNECT and SUBSCRIBE, then never reads, through a 4 KiB window.
            let slow = try rawSubscriberSocket(port: port, clientID: "never-reads", topic: "flood", qos: .atMostOnce)
            defer { close(slow) }
            let (fast, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "reads"))
            _ = try await fast.subscribe("flood", qos: .atMostOnce)
            #expect(try await server.waitForSubscriptions(2))
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))

            let payload = ByteBuffer(repeating: UInt8(ascii: "x"), count: Self.payloadSize)
            var received = 0
            let perRound = 32  // 32 KiB: less than the bound, so the reading subscriber never falls behind by it
            for round in 1...(Self.messageCount / perRound) {
                var batch = publisher.channel.allocator.buffer(capacity: perRound * (Self.payloadSize + 16))
                for _ in 0..<perRound {
                    try MQTTPacketEncoder.encode(.publish(PublishPacket(topic: "flood", payload: payload)), into: &batch)
                }
                try await publisher.channel.writeAndFlush(batch)
                // The reading subscriber reads the round before the next one is sent.
                while received < round * perRound, let packet = try? await fast.next(timeout: .seconds(2)) {
                    if case .publish = packet { received += 1 }
                }
            }
            let droppedForSlow = try await server.withCore { $0.statistics.publishDroppedSlowConsumer } ?? 0
            #expect(droppedForSlow > 0, "the non-reading subscriber's copies were never dropped")
            // A good part of them: the kernel holds at most its send buffer limit (4 MiB here, `tcp_wmem`).
            #expect(droppedForSlow > UInt64(Self.messageCount / 4))
            // Not one of the reading subscriber's copies is dropped for the other's sake.
            #expect(received == Self.messageCount)
            await publisher.close()
            await fast.close()
        }
    }
}
