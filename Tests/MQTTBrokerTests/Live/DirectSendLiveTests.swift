import Foundation
import MQTTCore
import NIOCore
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

    /// Sockets are dealt to the loops in turn: with two loops, one connection opened before the subscriber puts the
    /// subscriber on the other loop, so one of the two runs relays its socket (``RelayedChannel``) and the other
    /// serves it on the core's loop (``PipelineChannel``).
    @Test(
        "a subscriber reading slowly through a 4 KiB window gets every QoS 1 message once, whole and in order",
        arguments: [(loops: 1, connectionsBefore: 0), (loops: 2, connectionsBefore: 0), (loops: 2, connectionsBefore: 1)])
    func slowReaderGetsEveryByteInOrder(loops: Int, connectionsBefore: Int) async throws {
        // No window and no output bound that a slow reader reaches: the broker writes every message as it arrives,
        // so its socket's send buffer fills and flushes are taken in part.
        try await withLiveBroker(loops: loops, {
            $0.maxInflightMessages = 65535
            $0.maxQueuedMessages = 10_000
            $0.maxPendingOutputBytes = 64 << 20
            $0.slowConsumerTimeout = nil
        }) { server, address in
            let port = try #require(address.port)
            var earlier: [RawConnection] = []
            for _ in 0..<connectionsBefore { earlier.append(try await RawConnection.open(to: address)) }
            let subscriber = try SlowSubscriber(port: port, topic: "direct/send")
            defer { subscriber.close() }
            #expect(try await server.waitForSubscriptions(1))
            let reading = subscriber.startReading(expected: Self.messageCount)

            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "direct-pub"))
            // Batches of 64 messages (about 23 KB), the next one sent once the broker has acknowledged the last: each
            // read batch is then flushed to the subscriber as one buffer (below the hand-over threshold), the kind of
            // flush that may go straight to the socket.
            let batchSize = 64
            for first in stride(from: 0, to: Self.messageCount, by: batchSize) {
                var batch = publisher.channel.allocator.buffer(capacity: 4 * 1024)
                let indices = first..<min(first + batchSize, Self.messageCount)
                for index in indices {
                    try MQTTPacketEncoder.encode(
                        .publish(PublishPacket(
                            topic: "direct/send", payload: ByteBuffer(bytes: Self.payload(index)), qos: .atLeastOnce,
                            packetID: UInt16(index % batchSize + 1))),
                        into: &batch)
                }
                if indices.contains(Self.readingStartsAfter) { subscriber.startGate.signal() }
                try await publisher.channel.writeAndFlush(batch)
                for _ in indices {
                    guard case .puback = try await publisher.next() else {
                        Issue.record("the publisher got something other than a PUBACK")
                        return
                    }
                }
            }

            let received = await reading.value
            #expect(received.error == nil, "\(received.error ?? "")")
            #expect(received.payloads.count == Self.messageCount)
            for (index, payload) in received.payloads.enumerated() where payload != Self.payload(index) {
                Issue.record("message \(index) arrived as \(payload.count) bytes starting \(Array(payload.prefix(4)))")
                break
            }
            await publisher.close()
            for connection in earlier { await connection.close() }
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
