import EpollEventLoop
import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The broker's own epoll loop over real sockets (``EpollSocketTransport``): which engine serves a socket, and the
/// paths SwiftNIO used to take care of (a client gone while its reads are paused). The other live suites run on
/// one loop too, so they cover the epoll socket's reading, writing and back-pressure as well.
@Suite("Epoll sockets (live)", .timeLimit(.minutes(1)))
struct EpollSocketLiveTests {
    /// Whether the connection of `clientID` is served on the broker's epoll loop.
    func servedOnEpoll(_ server: MQTTBrokerServer, _ clientID: String) async throws -> Bool? {
        try await server.withCore { core -> Bool? in
            guard let transport = core.session(forClientID: clientID)?.connection?.transport else { return nil }
            return transport is EpollSocketTransport
        } ?? nil
    }

    @Test(
        "on one loop, socket_engine auto serves plain TCP on the broker's epoll loop and nio on SwiftNIO; both deliver and acknowledge, without Nagle",
        arguments: [SocketEngine.automatic, .swiftNIO])
    func engineChoice(engine: SocketEngine) async throws {
        try await withLiveBroker(loops: 1, { $0.socketEngine = engine }) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "engine-sub"))
            _ = try await subscriber.subscribe("engine/t", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "engine-pub"))
            #expect(try await servedOnEpoll(server, "engine-sub") == (engine == .automatic))
            #expect(try await servedOnEpoll(server, "engine-pub") == (engine == .automatic))
            // Small packets leave at once: Nagle's algorithm is off on the broker's side of the socket.
            let descriptor = try #require(try await server.withCore {
                $0.session(forClientID: "engine-sub")?.connection?.socketDescriptor
            } ?? nil)
            var noDelay: CInt = 0
            var length = socklen_t(MemoryLayout<CInt>.size)
            #expect(getsockopt(descriptor, CInt(IPPROTO_TCP), TCP_NODELAY, &noDelay, &length) == 0)
            #expect(noDelay != 0)
            try await publisher.send(
                .publish(PublishPacket(topic: "engine/t", payload: ByteBuffer(string: "hi"), qos: .atLeastOnce, packetID: 7)))
            #expect(String(buffer: try await subscriber.nextPublish().payload) == "hi")
            // The publisher's PUBACK is held for the end of the loop's tick and still leaves with nothing else to
            // send it on its way (on the epoll loop, the loop's iteration-end handler flushes it).
            #expect(try await publisher.next() == .puback(PubAckPacket(packetID: 7)))
            await publisher.close()
            await subscriber.close()
        }
    }

    @Test("a publisher whose socket reads are paused and which resets its connection is dropped at once, will and all")
    func resetWhilePaused() async throws {
        try await withLiveBroker(loops: 1, { config in
            config.maxInflightMessages = 1
            config.maxQueuedMessages = 10
            config.backpressureStallTimeout = .seconds(30)  // longer than the test: only the reset can end the pause
        }) { server, address in
            let (watcher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "paused-watch"))
            _ = try await watcher.subscribe("paused/will", qos: .atMostOnce)
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "paused-sub"))
            _ = try await subscriber.subscribe("paused/t", qos: .atLeastOnce, packetID: 2)
            let will = ConnectPacket.Will(topic: "paused/will", payload: ByteBuffer(string: "gone"))
            let (publisher, _) = try await LiveClient.connect(
                to: address, ConnectPacket(clientIdentifier: "paused-pub", will: will))
            #expect(try await servedOnEpoll(server, "paused-pub") == true)

            // The subscriber acknowledges nothing, so the publisher is paused; 64 KB more of PUBLISHes make the
            // broker stop reading its socket (it reads 16 KB past a pause at most).
            var buffer = publisher.channel.allocator.buffer(capacity: 80_000)
            for index in 0..<2_000 {
                try MQTTPacketEncoder.encode(
                    .publish(PublishPacket(
                        topic: "paused/t", payload: ByteBuffer(repeating: 0x61, count: 16), qos: .atLeastOnce,
                        packetID: UInt16(index % 60_000 + 1))),
                    into: &buffer)
            }
            try await publisher.channel.writeAndFlush(buffer)
            let socketPaused = try await poll(every: .milliseconds(20), for: .seconds(5)) {
                try await server.withCore { $0.session(forClientID: "paused-pub")?.connection?.readPause.isSocketPaused } == true
            }
            #expect(socketPaused)

            // A reset (linger 0), not a FIN: the broker hears of it only as a hang-up, not a readable socket.
            let options = try #require(publisher.channel as? any SocketOptionProvider)
            try await options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).get()
            try await publisher.channel.close()
            let published = try await watcher.nextPublish(timeout: .seconds(5))
            #expect(published.topic == "paused/will")
            #expect(String(buffer: published.payload) == "gone")
            let dropped = try await poll(every: .milliseconds(20), for: .seconds(5)) {
                try await server.withCore { $0.session(forClientID: "paused-pub")?.connection == nil } == true
            }
            #expect(dropped)
            await subscriber.close()
            await watcher.close()
        }
    }

    @Test(
        "under a burst the broker's epoll loop polls before it sleeps, as poll_before_sleep_us says; 0 never polls",
        arguments: [TimeAmount.microseconds(20), .zero])
    func pollingFollowsTheConfig(limit: TimeAmount) async throws {
        try await withLiveBroker(loops: 1, { $0.pollBeforeSleep = limit }) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "poll-sub"))
            _ = try await subscriber.subscribe("poll/t", qos: .atMostOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "poll-pub"))
            // 20,000 messages in one write keep the loop busy for milliseconds, with no wait longer than a read. The
            // loop counts as busy only once a window of a millisecond closes inside the burst; 5,000 messages were
            // sometimes handled within one window, and then the loop never polled.
            let count = 20_000
            var buffer = publisher.channel.allocator.buffer(capacity: count * 30)
            for _ in 0..<count {
                try MQTTPacketEncoder.encode(
                    .publish(PublishPacket(topic: "poll/t", payload: ByteBuffer(repeating: 0x61, count: 16))), into: &buffer)
            }
            try await publisher.channel.writeAndFlush(buffer)
            for _ in 0..<count { _ = try await subscriber.nextPublish() }
            let counts = try #require(try await server.withCore { ($0.eventLoop as? EpollEventLoop)?.pollingCounts } ?? nil)
            if limit == .zero {
                #expect(counts.polledWaits == 0)
            } else {
                #expect(counts.polledWaits > 0, "the busy loop never polled")
            }
            await publisher.close()
            await subscriber.close()
        }
    }
}
