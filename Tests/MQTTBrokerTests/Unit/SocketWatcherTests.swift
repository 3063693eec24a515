import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import MQTTBroker

#if canImport(Glibc)
import Glibc
#endif

/// The socket watcher on its own, over a real socket pair: a watched socket is reported once when it becomes
/// readable, an unwatched one never, and tickets carry the descriptor and generation apart from the listener tag.
@Suite("SocketWatcher", .timeLimit(.minutes(1)))
struct SocketWatcherTests {
    @Test("a ticket keeps the descriptor and a 31-bit generation, and never sets the top bit")
    func tickets() {
        for (descriptor, generation) in [(CInt(0), UInt32(0)), (19_999, 1), (CInt.max, UInt32.max), (7, 0x8000_0001)] {
            let ticket = SocketWatcher.ticket(descriptor: descriptor, generation: generation)
            #expect(SocketWatcher.descriptor(of: ticket) == descriptor)
            #expect(ticket >> 63 == 0)
            #expect(UInt32(ticket >> 32) == generation & 0x7FFF_FFFF)
        }
        #expect(SocketWatcher.ticket(descriptor: 5, generation: 1) != SocketWatcher.ticket(descriptor: 5, generation: 2))
    }

    @Test("a watched socket is reported once when readable; an unwatched one is not")
    func reportsReadableOnce() async throws {
        let reported = NIOLockedValueBox<[SocketWatcher.Ticket]>([])
        let watcher = try SocketWatcher(
            onParkedReady: { tickets in reported.withLockedValue { $0 += tickets } }, onAcceptError: { _ in })
        var pair: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var other: [CInt] = [0, 0]
        #expect(socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0, &other) == 0)
        defer { for descriptor in pair + other { close(descriptor) } }

        let ticket = SocketWatcher.ticket(descriptor: pair[0], generation: 3)
        try watcher.watch(pair[0], ticket: ticket)
        try watcher.watch(other[0], ticket: SocketWatcher.ticket(descriptor: other[0], generation: 1))
        watcher.unwatch(other[0])
        try await Task.sleep(for: .milliseconds(50))
        #expect(reported.withLockedValue { $0 }.isEmpty)

        var byte: UInt8 = 1
        #expect(write(pair[1], &byte, 1) == 1)
        #expect(write(other[1], &byte, 1) == 1)
        let deadline = ContinuousClock.now + .seconds(5)
        while reported.withLockedValue({ $0 }).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(write(pair[1], &byte, 1) == 1)  // one-shot: no second report until watched again
        try await Task.sleep(for: .milliseconds(50))
        #expect(reported.withLockedValue { $0 } == [ticket])

        let stopped = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        watcher.stop(promise: stopped)
        try await stopped.futureResult.get()
    }
}
