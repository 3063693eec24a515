import LiveTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import MQTTBroker

#if canImport(Glibc)
import Glibc
#endif

/// ``DirectSocketWriter`` on a real socket that NIO owns, with the broker's write-buffer watermark. NIO counts a
/// queue of exactly one byte as writable, so a direct write that leaves one byte to NIO while the socket is full
/// must keep later flushes away from the socket until NIO has written that byte, or they overtake it. The kernel
/// decides how much of a write it takes, so the test's write function plays the kernel that takes all but the last
/// byte: it writes the rest, then fills the socket with filler bytes.
@Suite("Direct socket writer (live)", .timeLimit(.minutes(1)))
struct DirectSocketWriterLiveTests {
    @Test("a flush after a direct write that left one byte to NIO waits behind that byte; then direct writes resume")
    func oneByteLeftToNIOIsNotOvertaken() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pair = try ConnectedPair()
        var adopted: (any Channel)?
        do {
            let channel = try await ClientBootstrap(group: group)
                .channelOption(.writeBufferWaterMark, value: MQTTBrokerServer.writabilityMeansNothingQueued)
                .withConnectedSocket(pair.server)
                .get()
            adopted = channel
            try await check(channel: channel, pair: pair)
        } catch {
            Issue.record(error)
        }
        try? await adopted?.close()
        if adopted == nil { close(pair.server) }  // otherwise NIO closed it
        close(pair.client)
        try await group.shutdownGracefully()
    }

    private func check(channel: any Channel, pair: ConnectedPair) async throws {
        let first = ByteBuffer(bytes: (0..<100).map { UInt8($0) })  // its last byte, 99, is left to NIO
        let second = ByteBuffer(bytes: (0..<50).map { UInt8(200 + $0) })
        let third = ByteBuffer(bytes: [7, 7, 7])
        let writer = WriterBox(DirectSocketWriter(descriptor: pair.server))

        // On the channel's loop, as the broker does: NIO handles no event of the socket's until this returns.
        let (outcomes, fillerCount, queuedWithNIO, writableWithOneByteQueued) = try await channel.eventLoop.submit {
            var buffer = first
            var filler = 0
            let firstOutcome = writer.value.write(&buffer, channel: channel) { descriptor, bytes in
                let taken = Descriptor.writeAvailable(descriptor, UnsafeRawBufferPointer(rebasing: bytes.dropLast()))
                filler = fillSocket(descriptor)
                return taken
            }
            // The caller's part on a leftover: hand it to NIO, and tell the writer once NIO has written it.
            channel.writeAndFlush(buffer).whenComplete { _ in writer.value.leftoverWritten() }
            let queued = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? -1
            let writable = channel.isWritable

            // The peer reads everything the socket held, so the socket has room again before NIO hears of it.
            guard readExactly(pair.client, count: 99 + filler) != nil else { throw HarnessError("peer read failed") }
            var poll = pollfd(fd: pair.server, events: Int16(POLLOUT), revents: 0)
            guard Glibc.poll(&poll, 1, 5_000) == 1 else { throw HarnessError("the socket did not drain in 5 s") }

            var next = second
            let secondOutcome = writer.value.write(&next, channel: channel)
            if secondOutcome != .written { channel.writeAndFlush(next, promise: nil) }  // as the caller does
            return ([firstOutcome, secondOutcome], filler, queued, writable)
        }.get()

        #expect(outcomes == [.leftover, .declined], "the second flush must wait for NIO's byte, not write directly")
        #expect(fillerCount > 0, "the socket was not filled, so NIO did not hold the leftover")
        #expect(queuedWithNIO == 1)
        #expect(writableWithOneByteQueued, "NIO now reports one queued byte as unwritable: revisit the writer's checks")
        // The peer gets the left byte first, then the second flush.
        let tail = readExactly(pair.client, count: 1 + second.readableBytes)
        #expect(tail == [99] + Array(second.readableBytesView))

        // NIO has written its byte (the second flush, behind it, too): the next flush goes straight to the socket.
        let thirdOutcome = try await channel.eventLoop.submit {
            var buffer = third
            return writer.value.write(&buffer, channel: channel)
        }.get()
        #expect(thirdOutcome == .written)
        #expect(readExactly(pair.client, count: 3) == [7, 7, 7])
    }
}

/// The writer, shared by the loop's tasks and the leftover's completion (all on the channel's loop).
private final class WriterBox: @unchecked Sendable {
    var value: DirectSocketWriter
    init(_ value: DirectSocketWriter) { self.value = value }
}

/// A TCP connection on 127.0.0.1: `server`, the accepted side with a small send buffer (for NIO to adopt), and
/// `client`, a blocking socket with a small receive window whose reads time out after 5 s.
private struct ConnectedPair {
    let server: CInt
    let client: CInt

    init() throws {
        let (listener, port) = try listeningSocket()
        defer { close(listener) }
        client = try connectedSocket(port: port, receiveBufferSize: 4096)
        server = accept(listener, nil, nil)
        guard server >= 0 else {
            close(client)
            throw HarnessError("accept failed, errno \(errno)")
        }
        var sendBuffer: Int32 = 4096
        setsockopt(server, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// Writes filler bytes to a non-blocking socket until it takes no more (at most 16 MiB); how many it took.
private func fillSocket(_ descriptor: CInt) -> Int {
    let chunk = [UInt8](repeating: 0xEE, count: 4096)
    var total = 0
    while total < 16 << 20 {
        let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written > 0 else { break }
        total += written
    }
    return total
}

/// Reads exactly `count` bytes from a blocking socket; nil when it closes, fails or a read times out first.
private func readExactly(_ descriptor: CInt, count: Int) -> [UInt8]? {
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        let read = bytes.withUnsafeMutableBytes { buffer -> Int in
            guard let base = buffer.baseAddress else { return -1 }
            return recv(descriptor, base + filled, count - filled, 0)
        }
        guard read > 0 else { return nil }
        filled += read
    }
    return bytes
}
