import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import Synchronization
import Testing

@testable import MQTTBroker

#if canImport(Glibc)
import Glibc
#endif

/// The broker writes a flush straight to a plain-TCP socket it accepted itself while NIO's queue for it is empty, and
/// hands NIO what the kernel does not take (``DirectSocketWriter``). Over a real socket with a small receive window,
/// a subscriber that reads slowly, with the broker's window and output bound open, makes the kernel take part of a
/// flush, or nothing: every message must still arrive once, whole and in order, whichever of the two paths each
/// flush took. (The one-byte leftover that NIO still counts as writable is ``DirectSocketWriterLiveTests``'.)
@Suite("Direct sends (live)", .timeLimit(.minutes(1)))
struct DirectSendLiveTests {
    /// About 9 MB in all.
    static let messageCount = 24_000
    /// The subscriber starts reading once this many messages (about 6 MB) are published: more than the kernel
    /// buffers for one socket here (`tcp_wmem` allows up to 4 MiB), so the broker's writes to it have met a full
    /// socket by then, and NIO holds the rest. While it reads, the socket drains and fills again as new flushes
    /// arrive, some while NIO's queue still holds bytes.
    static let readingStartsAfter = 16_000

    /// Message `index`'s payload: its index, then 200 to 499 bytes that depend on it, so a byte sent twice, lost or
    /// out of place shows in the decoded stream. Small enough to be copied into the connection's output buffer
    /// (``PublishEncoding/inlinePayloadLimit``), so that a flush is one buffer, which may go straight to the socket.
    static func payload(_ index: Int) -> [UInt8] {
        let size = 200 + (index &* 1_237) % 300
        var bytes = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
        bytes.reserveCapacity(4 + size)
        for offset in 0..<size {
            bytes.append(UInt8(truncatingIfNeeded: index &* 31 &+ offset &* 7))
        }
        return bytes
    }

    /// The three placements of the subscriber's socket. Sockets are dealt to the loops in turn: with two loops, one
    /// connection opened before the subscriber puts the subscriber on the other loop, so one of the two runs relays
    /// its socket (``RelayedChannel``) and the other serves it on the core's loop (``PipelineChannel``).
    static let placements = [(loops: 1, connectionsBefore: 0), (loops: 2, connectionsBefore: 0), (loops: 2, connectionsBefore: 1)]

    @Test(
        "a subscriber reading slowly through a 4 KiB window gets every QoS 1 message once, whole and in order",
        arguments: placements)
    func slowReaderGetsEveryByteInOrder(loops: Int, connectionsBefore: Int) async throws {
        try await withSlowSubscriber(loops: loops, connectionsBefore: connectionsBefore) { _, subscriber, publisher in
            let reading = subscriber.startReading(expected: Self.messageCount)
            // Batches of 64 messages (about 23 KB), the next one sent once the broker has acknowledged the last: each
            // read batch is then flushed to the subscriber as one buffer (below the hand-over threshold), the kind of
            // flush that may go straight to the socket.
            for first in stride(from: 0, to: Self.messageCount, by: Self.batchSize) {
                let indices = first..<min(first + Self.batchSize, Self.messageCount)
                if indices.contains(Self.readingStartsAfter) { subscriber.startGate.signal() }
                try await Self.publish(indices, through: publisher, packetIDsCycle: Self.batchSize)
            }
            Self.expectEveryPayloadInOrder(await reading.value, count: Self.messageCount)
        }
    }

    /// With the broker's send buffer for the subscriber made small (8 KiB, below one batch of about 23 KB), a flush
    /// that meets an empty NIO queue and a drained socket goes straight to the socket, is taken in part, and leaves
    /// the rest to NIO; the flushes after it go to NIO behind the leftover, and once NIO has written everything the
    /// next flush goes straight to the socket again. The publisher sends groups of four batches and waits for
    /// each group to arrive before the next, so the cycle repeats about 30 times per case.
    @Test(
        "with a small send buffer, partial direct writes, NIO's leftovers and resumed direct writes keep every byte in order",
        arguments: placements)
    func partialDirectWritesRepeatInOrder(loops: Int, connectionsBefore: Int) async throws {
        let messageCount = 8_000
        try await withSlowSubscriber(loops: loops, connectionsBefore: connectionsBefore) { server, subscriber, publisher in
            let brokerSide = try #require(try await server.withCore { core in
                core.session(forClientID: "direct-sub")?.connection?.socketDescriptor
            } ?? nil)
            var sendBuffer: Int32 = 4096  // the kernel doubles it
            #expect(setsockopt(brokerSide, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size)) == 0)
            subscriber.startGate.signal()
            let reading = subscriber.startReading(expected: messageCount)

            // Groups of 4 batches written one after the other: the first of a group meets an empty NIO queue, the
            // others the first one's leftover.
            let groupSize = 4 * Self.batchSize
            for groupStart in stride(from: 0, to: messageCount, by: groupSize) {
                let group = groupStart..<min(groupStart + groupSize, messageCount)
                try await Self.publish(group, through: publisher, packetIDsCycle: groupSize)
                // Everything arrives before the next group: NIO's queue is empty again.
                guard try await subscriber.waitUntilReceived(group.upperBound, within: .seconds(10)) else {
                    Issue.record("the subscriber had \(subscriber.receivedCount) of \(group.upperBound) after 10 s")
                    break
                }
            }
            Self.expectEveryPayloadInOrder(await reading.value, count: messageCount)
        }
    }

    /// Messages per batch the publisher writes at once: about 23 KB.
    static let batchSize = 64

    /// Runs `body` with a broker on `loops` loops, a ``SlowSubscriber`` to "direct/send" (not reading until told)
    /// placed after `connectionsBefore` other connections, and a publisher. The broker has no window and no output
    /// bound that a slow reader reaches: it writes every message as it arrives, so the subscriber's socket fills and
    /// flushes are taken in part.
    private func withSlowSubscriber(
        loops: Int, connectionsBefore: Int,
        _ body: (MQTTBrokerServer, SlowSubscriber, LiveClient) async throws -> Void
    ) async throws {
        try await withLiveBroker(loops: loops, {
            $0.maxInflightMessages = 65535
            $0.maxQueuedMessages = 10_000
            $0.maxPendingOutputBytes = 64 << 20
            $0.slowConsumerTimeout = nil
            // The subscriber is silent until told to read. On a loaded machine the set-up takes longer than the
            // default parking delay, and a parked subscriber is off its channel: no direct writes to test, and its
            // descriptor changes hands while the test sets its send buffer.
            $0.parkIdleConnectionsAfter = .seconds(600)
        }) { server, address in
            let port = try #require(address.port)
            var earlier: [RawConnection] = []
            for _ in 0..<connectionsBefore { earlier.append(try await RawConnection.open(to: address)) }
            let subscriber = try SlowSubscriber(port: port, topic: "direct/send")
            defer { subscriber.close() }
            #expect(try await server.waitForSubscriptions(1))
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "direct-pub"))
            try await body(server, subscriber, publisher)
            await publisher.close()
            for connection in earlier { await connection.close() }
        }
    }

    /// Publishes messages `indices` at QoS 1 in batches of ``batchSize``, each batch written as one buffer, all of
    /// them before awaiting their PUBACKs; packet identifiers repeat every `packetIDsCycle` messages.
    private static func publish(_ indices: Range<Int>, through publisher: LiveClient, packetIDsCycle: Int) async throws {
        for first in stride(from: indices.lowerBound, to: indices.upperBound, by: batchSize) {
            var batch = publisher.channel.allocator.buffer(capacity: 32 * 1024)
            for index in first..<min(first + batchSize, indices.upperBound) {
                try MQTTPacketEncoder.encode(
                    .publish(PublishPacket(
                        topic: "direct/send", payload: ByteBuffer(bytes: payload(index)), qos: .atLeastOnce,
                        packetID: UInt16(index % packetIDsCycle + 1))),
                    into: &batch)
            }
            try await publisher.channel.writeAndFlush(batch)
        }
        for _ in indices {
            guard case .puback = try await publisher.next() else {
                throw HarnessError("the publisher got something other than a PUBACK")
            }
        }
    }

    /// The subscriber read all `count` messages without error, each once, whole and in order.
    private static func expectEveryPayloadInOrder(_ received: SlowSubscriber.Received, count: Int) {
        #expect(received.error == nil, "\(received.error ?? "")")
        #expect(received.payloads.count == count)
        for (index, payload) in received.payloads.enumerated() where payload != Self.payload(index) {
            Issue.record("message \(index) arrived as \(payload.count) bytes starting \(Array(payload.prefix(4)))")
            break
        }
    }
}

/// A subscriber on a blocking socket with a 4 KiB window (``rawSubscriberSocket(port:clientID:topic:qos:receiveBufferSize:)``)
/// that, once told to start, reads up to 8 KiB at a time with half a millisecond's pause between reads and
/// acknowledges each PUBLISH as it decodes it.
private final class SlowSubscriber: Sendable {
    let descriptor: CInt
    /// Reading starts when this is signalled (or after 30 s).
    let startGate = DispatchSemaphore(value: 0)
    private let arrived = Atomic<Int>(0)

    /// How many PUBLISHes have arrived so far.
    var receivedCount: Int { arrived.load(ordering: .acquiring) }

    /// Waits (polling every millisecond) until `count` PUBLISHes have arrived; false if they have not within `limit`.
    func waitUntilReceived(_ count: Int, within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while receivedCount < count {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    init(port: Int, topic: String) throws {
        descriptor = try rawSubscriberSocket(port: port, clientID: "direct-sub", topic: topic, qos: .atLeastOnce)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)  // bounds every read
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Wakes the reading thread, if it still waits, and closes the socket.
    func close() {
        startGate.signal()
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        _ = Glibc.close(descriptor)
    }

    /// The payloads of the PUBLISHes received, in order, and why reading stopped early (nil: it did not).
    struct Received: Sendable {
        var payloads: [[UInt8]] = []
        var error: String?
    }

    /// Reads on a thread of its own until `expected` PUBLISHes have arrived, the socket fails, or a read waits 10 s.
    func startReading(expected: Int) -> Task<Received, Never> {
        let subscriber = self
        return Task {
            await withCheckedContinuation { continuation in
                let thread = Thread { continuation.resume(returning: subscriber.read(expected: expected)) }
                thread.start()
            }
        }
    }

    private func read(expected: Int) -> Received {
        var received = Received()
        _ = startGate.wait(timeout: .now() + 30)
        var decoder = MQTTPacketDecoder()
        var input = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 8192)
        while received.payloads.count < expected {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                received.error = "read returned \(count) (errno \(errno)) after \(received.payloads.count) messages"
                return received
            }
            input.writeBytes(chunk[0..<count])
            do {
                while let packet = try decoder.decode(from: &input) {
                    guard case .publish(let publish) = packet else { continue }  // CONNACK, SUBACK
                    received.payloads.append(Array(publish.payload.readableBytesView))
                    arrived.add(1, ordering: .releasing)
                    guard let packetID = publish.packetID, publish.qos == .atLeastOnce, !publish.dup else {
                        received.error = "message \(received.payloads.count - 1) came with QoS \(publish.qos), dup \(publish.dup)"
                        return received
                    }
                    var acknowledgement = ByteBuffer()
                    try MQTTPacketEncoder.encode(.puback(PubAckPacket(packetID: packetID)), into: &acknowledgement)
                    guard sendAll(descriptor, acknowledgement) else {
                        received.error = "PUBACK not sent (errno \(errno))"
                        return received
                    }
                }
            } catch {
                received.error = "undecodable stream after \(received.payloads.count) messages: \(error)"
                return received
            }
            usleep(500)
        }
        return received
    }
}
