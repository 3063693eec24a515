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

    /// A subscriber that sends CONNECT and SUBSCRIBE and then never reads (a 4 KiB receive buffer, set before
    /// connecting so that the window stays small). Returns the socket, to be closed by the caller.
    func nonReadingSubscriber(port: Int, topic: String) throws -> CInt {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        var size: CInt = 4096
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(.connect(ConnectPacket(clientIdentifier: "never-reads")), into: &buffer)
        try MQTTPacketEncoder.encode(
            .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: topic, qos: .atMostOnce)])),
            into: &buffer)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        try #require(sent == bytes.count)
        return descriptor
    }

    @Test("a subscriber that stops reading has its QoS 0 copies dropped; one that reads keeps receiving", arguments: [1, 2])
    func nonReadingSubscriberIsBounded(loops: Int) async throws {
        try await withLiveBroker({ config in
            config.maxPendingOutputBytes = 64 * 1024
            config.slowConsumerTimeout = nil
            config.eventLoopCount = loops
        }) { server, address in
            let port = try #require(address.port)
            let slow = try nonReadingSubscriber(port: port, topic: "flood")
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
