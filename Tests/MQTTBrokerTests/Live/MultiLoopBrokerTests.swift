import Foundation
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The broker with its sockets spread over four event loops of a group the test owns: routing stays correct when
/// clients on different loops subscribe, unsubscribe, publish and take sessions over at the same time.
@Suite("MQTTBrokerServer over several event loops", .timeLimit(.minutes(1)))
struct MultiLoopBrokerTests {
    /// Runs `body` against a broker whose sockets are spread over a four-thread group created for the test. The
    /// broker still accepts the sockets itself (as with parking on), but parks none during the test: on a loaded
    /// host an idle client could otherwise park (after the default 500 ms) before the last one connects, and come
    /// back on whichever loop is next, so the loops in use would depend on timing.
    func withFourLoopBroker<T>(
        _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
    ) async throws -> T {
        try await withLiveBroker(loops: 4, { $0.parkIdleConnectionsAfter = .seconds(600) }, body)
    }

    @Test("QoS 2 under concurrent subscribe, unsubscribe and publish on four loops: exactly once, in order, in window")
    func concurrentRoutingAcrossLoops() async throws {
        try await withFourLoopBroker { server, address in
            #expect(server.socketEventLoopCount == 4)
            let publisherCount = 4
            let messagesPerPublisher = 40
            let subscriberCount = 8
            let publishersDone = DoneFlag()

            // Subscribers connect first so every one of them is live before the publishers start.
            var subscribers: [(LiveClient, Int)] = []
            for index in 0..<subscriberCount {
                let (client, connack) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "sub-\(index)"))
                #expect(connack.returnCode == .accepted)
                subscribers.append((client, index))
            }
            var publishers: [(LiveClient, Int)] = []
            for index in 0..<publisherCount {
                let (client, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub-\(index)"))
                publishers.append((client, index))
            }
            #expect(try await server.withCore { $0.socketEventLoopsInUse } == 4)

            let (subscriberLogs, publisherLogs) = try await withThrowingTaskGroup(of: RunLog.self) { group in
                for (client, index) in subscribers {
                    group.addTask {
                        // Staggered windows: some subscribe late, some leave early, odd ones stay to the end.
                        let subscribeDelay = Duration.milliseconds(7 * index)
                        let leaveAfter: Duration? = index.isMultiple(of: 2) ? .milliseconds(40 + 15 * index) : nil
                        let log = try await runWindowedSubscriber(
                            client, subscribeDelay: subscribeDelay, leaveAfter: leaveAfter, done: publishersDone)
                        return .subscriber(log)
                    }
                }
                for (client, index) in publishers {
                    group.addTask {
                        let timings = try await runQoS2Publisher(client, index: index, count: messagesPerPublisher)
                        return .publisher(index, timings)
                    }
                }
                var subscriberLogs: [SubscriberLog] = []
                var publisherLogs: [Int: [PublishTiming]] = [:]
                var publishersFinished = 0
                for try await log in group {
                    switch log {
                    case .subscriber(let log): subscriberLogs.append(log)
                    case .publisher(let index, let timings):
                        publisherLogs[index] = timings
                        publishersFinished += 1
                        if publishersFinished == publisherCount { await publishersDone.set() }
                    }
                }
                return (subscriberLogs, publisherLogs)
            }

            #expect(subscriberLogs.count == subscriberCount)
            var mandatoryDeliveries = 0
            for log in subscriberLogs {
                // Exactly once: no message twice, QoS 2 never re-sent with DUP on a healthy connection.
                #expect(Set(log.received).count == log.received.count, "duplicates at \(log.clientID)")
                #expect(log.sawDuplicateFlag == false)
                for publisher in 0..<publisherCount {
                    let sequence = log.received.filter { $0.publisher == publisher }.map(\.sequence)
                    #expect(sequence == sequence.sorted(), "order of pub-\(publisher) at \(log.clientID)")
                }
                let received = Set(log.received)
                for (publisher, timings) in publisherLogs {
                    for (offset, timing) in timings.enumerated() {
                        let id = MessageID(publisher: publisher, sequence: offset + 1)
                        let afterSubAck = timing.sentAt > log.subAckAt
                        let beforeUnsubscribe = log.unsubscribeSentAt.map { timing.completedAt < $0 } ?? true
                        if afterSubAck && beforeUnsubscribe {
                            mandatoryDeliveries += 1
                            #expect(received.contains(id), "\(log.clientID) missed \(id)")
                        }
                        let beforeSubscribe = timing.completedAt < log.subscribeSentAt
                        let afterUnsubAck = log.unsubAckAt.map { timing.sentAt > $0 } ?? false
                        if beforeSubscribe || afterUnsubAck {
                            #expect(!received.contains(id), "\(log.clientID) got \(id) outside its window")
                        }
                    }
                }
            }
            // The windows overlap the publishing: the checks above were not vacuous.
            #expect(mandatoryDeliveries > 100)
            for (client, _) in subscribers + publishers { await client.close() }
        }
    }

    @Test("takeover by a connection on another loop while QoS 1 messages flow: the session continues without a will, nothing acknowledged is lost")
    func takeoverAcrossLoops() async throws {
        try await withFourLoopBroker { server, address in
            let (watcher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "watcher"))
            _ = try await watcher.subscribe("wills/#", qos: .atLeastOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            let will = ConnectPacket.Will(topic: "wills/dup", payload: ByteBuffer(string: "old gone"), qos: .atLeastOnce)
            let (old, _) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "dup", will: will))
            _ = try await old.subscribe("flow", qos: .atLeastOnce)
            let oldLoop = try await server.socketLoop(ofClientID: "dup")

            // Publishes until the takeover is done and 20 more went out (at least 120, at most 2,000): a fixed count
            // could all be acknowledged before a fast takeover and leave nothing for the new connection to check.
            let takenOver = TakeoverSignal()
            let published = Task { () throws -> [PublishTiming] in
                var timings: [PublishTiming] = []
                var afterTakeover = 0
                for n in 1...2000 {
                    let sentAt = ContinuousClock.now
                    try await publisher.send(
                        .publish(PublishPacket(topic: "flow", payload: ByteBuffer(string: "\(n)"), qos: .atLeastOnce, packetID: UInt16(n))))
                    guard case .puback = try await publisher.next() else { throw LiveClientError.connectionClosed }
                    timings.append(PublishTiming(sentAt: sentAt, completedAt: ContinuousClock.now))
                    if await takenOver.isSet { afterTakeover += 1 }
                    if n >= 120 && afterTakeover >= 20 { break }
                }
                return timings
            }
            let oldCount = TakeoverSignal()
            let oldReceived = Task { () -> [Int] in
                var received: [Int] = []
                while let publish = try? await old.nextPublish() {
                    received.append(Int(String(buffer: publish.payload)) ?? -1)
                    await oldCount.count()
                }
                return received
            }
            // Let messages flow to the old connection (a few arrived, or 5 s passed), then take the session over
            // from a fresh socket. A fixed sleep was too short when the whole suite runs at once.
            let flowing = ContinuousClock.now + .seconds(5)
            while await oldCount.received < 5, ContinuousClock.now < flowing {
                try await Task.sleep(for: .milliseconds(5))
            }
            let (new, connack) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "dup"))
            let connAckAt = ContinuousClock.now
            await takenOver.set()
            #expect(connack.returnCode == .accepted && connack.sessionPresent)
            let newLoop = try await server.socketLoop(ofClientID: "dup")
            #expect(oldLoop != nil && newLoop != nil && oldLoop != newLoop)
            #expect(await old.closedByBroker())

            let timings = try await published.value
            let count = timings.count
            #expect(count < 2000, "the takeover did not finish while 2,000 messages were published")
            var newReceived: [Int] = []
            while let publish = try? await new.nextPublish(timeout: .milliseconds(500)) {
                newReceived.append(Int(String(buffer: publish.payload)) ?? -1)
            }
            let before = await oldReceived.value
            #expect(!before.isEmpty)
            // QoS 1: every acknowledged message reaches the session, on the old or the new connection.
            #expect(Set(before + newReceived) == Set(1...count))
            // Everything published after the takeover goes to the new connection, in order.
            let mustReachNew = (1...count).filter { timings[$0 - 1].sentAt > connAckAt }
            #expect(!mustReachNew.isEmpty)
            #expect(Set(mustReachNew).isSubset(of: Set(newReceived)))
            var seen = Set<Int>()
            let firstCopies = newReceived.filter { seen.insert($0).inserted }
            #expect(firstCopies == firstCopies.sorted())

            // The session continued on the new connection, so the old will is not published (as mosquitto).
            let willMessage = try? await watcher.nextPublish(timeout: .milliseconds(500))
            #expect(willMessage == nil)
            for client in [watcher, publisher, new] { await client.close() }
        }
    }

    @Test("a persistent session that reconnects on another loop receives what was queued while it was away")
    func persistentSessionMovesLoops() async throws {
        try await withFourLoopBroker { server, address in
            let (first, _) = try await LiveClient.connect(to: address, ConnectPacket(cleanSession: false, clientIdentifier: "keeper"))
            _ = try await first.subscribe("queue/#", qos: .exactlyOnce)
            let firstLoop = try await server.socketLoop(ofClientID: "keeper")
            try await first.send(.disconnect(DisconnectPacket()))
            #expect(await first.closedByBroker())

            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(clientIdentifier: "pub"))
            for n in 1...10 {
                let qos: QoS = n.isMultiple(of: 2) ? .exactlyOnce : .atLeastOnce
                try await publisher.send(
                    .publish(PublishPacket(topic: "queue/\(n)", payload: ByteBuffer(string: "0:\(n)"), qos: qos, packetID: UInt16(n))))
                if qos == .exactlyOnce {
                    #expect(try await publisher.next() == .pubrec(PubRecPacket(packetID: UInt16(n))))
                    try await publisher.send(.pubrel(PubRelPacket(packetID: UInt16(n))))
                    #expect(try await publisher.next() == .pubcomp(PubCompPacket(packetID: UInt16(n))))
                } else {
                    #expect(try await publisher.next() == .puback(PubAckPacket(packetID: UInt16(n))))
                }
            }

            let (again, connack) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, clientIdentifier: "keeper"))
            #expect(connack.sessionPresent)
            let againLoop = try await server.socketLoop(ofClientID: "keeper")
            #expect(firstLoop != nil && againLoop != nil && firstLoop != againLoop)
            let probe = ProbeSubscriber(client: again)
            let deadline = ContinuousClock.now + .seconds(5)
            while probe.received.count < 10, ContinuousClock.now < deadline {
                do {
                    _ = try await probe.nextControlPacket(timeout: .milliseconds(100))
                } catch LiveClientError.timedOut {}
            }
            #expect(probe.received.map(\.sequence) == Array(1...10))
            for client in [publisher, again] { await client.close() }
        }
    }
}

// MARK: - Test support

extension MQTTBrokerServer {
    /// The event loop the socket of `clientID`'s current connection is served on.
    func socketLoop(ofClientID clientID: String) async throws -> ObjectIdentifier? {
        try await withCore { core in
            core.session(forClientID: clientID)?.connection.map { ObjectIdentifier($0.socketEventLoop) }
        } ?? nil
    }
}

/// Set once all publishers have finished.
private actor DoneFlag {
    private(set) var isDone = false
    func set() { isDone = true }
}

/// Publisher `publisher`'s message number `sequence` (payload "publisher:sequence").
private struct MessageID: Hashable, Sendable, CustomStringConvertible {
    var publisher: Int
    var sequence: Int
    var description: String { "\(publisher):\(sequence)" }
}

/// When a publisher sent a message and when its acknowledgement flow completed.
private struct PublishTiming: Sendable {
    var sentAt: ContinuousClock.Instant
    var completedAt: ContinuousClock.Instant
}

/// What one subscriber saw and when its subscription window opened and closed.
private struct SubscriberLog: Sendable {
    var clientID: String
    var subscribeSentAt: ContinuousClock.Instant
    var subAckAt: ContinuousClock.Instant
    var unsubscribeSentAt: ContinuousClock.Instant?
    var unsubAckAt: ContinuousClock.Instant?
    var received: [MessageID]
    var sawDuplicateFlag: Bool
}

private enum RunLog: Sendable {
    case subscriber(SubscriberLog)
    case publisher(Int, [PublishTiming])
}

/// Reads from one client like a well-behaved subscriber (PUBACK, PUBREC, PUBCOMP) and records the publishes.
private final class ProbeSubscriber {
    let client: LiveClient
    var received: [MessageID] = []
    var sawDuplicateFlag = false

    init(client: LiveClient) {
        self.client = client
    }

    /// Acknowledges and records publishes until a packet of another kind arrives, and returns it.
    func nextControlPacket(timeout: TimeAmount) async throws -> MQTTPacket {
        while true {
            let packet = try await client.next(timeout: timeout)
            switch packet {
            case .publish(let publish):
                record(publish)
                if let id = publish.packetID {
                    switch publish.qos {
                    case .atLeastOnce: try await client.send(.puback(PubAckPacket(packetID: id)))
                    case .exactlyOnce: try await client.send(.pubrec(PubRecPacket(packetID: id)))
                    case .atMostOnce: break
                    }
                }
            case .pubrel(let pubrel):
                try await client.send(.pubcomp(PubCompPacket(packetID: pubrel.packetID)))
            default:
                return packet
            }
        }
    }

    /// Reads until `deadline`; a quiet connection is not an error.
    func pump(until deadline: ContinuousClock.Instant) async throws {
        while ContinuousClock.now < deadline {
            do {
                _ = try await nextControlPacket(timeout: .milliseconds(20))
            } catch LiveClientError.timedOut {
                continue
            }
        }
    }

    private func record(_ publish: PublishPacket) {
        if publish.dup { sawDuplicateFlag = true }
        let parts = String(buffer: publish.payload).split(separator: ":").compactMap { Int($0) }
        received.append(MessageID(publisher: parts.first ?? -1, sequence: parts.last ?? -1))
    }
}

/// Subscribes to `load/#` at QoS 2 after `subscribeDelay`, optionally unsubscribes after `leaveAfter`, and reads
/// until the publishers are done and the connection has been quiet for a while.
private func runWindowedSubscriber(
    _ client: LiveClient, subscribeDelay: Duration, leaveAfter: Duration?, done: DoneFlag
) async throws -> SubscriberLog {
    let probe = ProbeSubscriber(client: client)
    try await Task.sleep(for: subscribeDelay)
    let subscribeSentAt = ContinuousClock.now
    try await client.send(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "load/#", qos: .exactlyOnce)])))
    guard case .suback(let suback) = try await probe.nextControlPacket(timeout: .seconds(5)) else {
        throw LiveClientError.connectionClosed
    }
    #expect(suback.returnCodes == [.granted(.exactlyOnce)])
    let subAckAt = ContinuousClock.now
    var unsubscribeSentAt: ContinuousClock.Instant?
    var unsubAckAt: ContinuousClock.Instant?
    if let leaveAfter {
        try await probe.pump(until: subAckAt + leaveAfter)
        unsubscribeSentAt = ContinuousClock.now
        try await client.send(.unsubscribe(UnsubscribePacket(packetID: 2, topicFilters: ["load/#"])))
        guard case .unsuback = try await probe.nextControlPacket(timeout: .seconds(5)) else {
            throw LiveClientError.connectionClosed
        }
        unsubAckAt = ContinuousClock.now
    }
    // Drain: the publishers finish, then the connection stays quiet for 300 ms.
    var quietSince = ContinuousClock.now
    while true {
        let before = probe.received.count
        do {
            _ = try await probe.nextControlPacket(timeout: .milliseconds(50))
        } catch LiveClientError.timedOut {}
        if probe.received.count != before { quietSince = ContinuousClock.now }
        if await done.isDone, ContinuousClock.now - quietSince > .milliseconds(300) { break }
    }
    let clientID = "sub at \(subscribeDelay)"
    return SubscriberLog(
        clientID: clientID, subscribeSentAt: subscribeSentAt, subAckAt: subAckAt, unsubscribeSentAt: unsubscribeSentAt,
        unsubAckAt: unsubAckAt, received: probe.received, sawDuplicateFlag: probe.sawDuplicateFlag)
}

/// Publishes `count` QoS 2 messages to `load/p<index>` one after the other, each through its full flow.
private func runQoS2Publisher(_ client: LiveClient, index: Int, count: Int) async throws -> [PublishTiming] {
    var timings: [PublishTiming] = []
    for n in 1...count {
        let id = UInt16(n)
        let sentAt = ContinuousClock.now
        try await client.send(
            .publish(PublishPacket(topic: "load/p\(index)", payload: ByteBuffer(string: "\(index):\(n)"), qos: .exactlyOnce, packetID: id)))
        guard try await client.next() == .pubrec(PubRecPacket(packetID: id)) else { throw LiveClientError.connectionClosed }
        try await client.send(.pubrel(PubRelPacket(packetID: id)))
        guard try await client.next() == .pubcomp(PubCompPacket(packetID: id)) else { throw LiveClientError.connectionClosed }
        timings.append(PublishTiming(sentAt: sentAt, completedAt: ContinuousClock.now))
    }
    return timings
}

/// Set once the takeover's CONNACK arrived (read by the publishing task), or counting what the old connection got.
private actor TakeoverSignal {
    private(set) var isSet = false
    private(set) var received = 0
    func set() { isSet = true }
    func count() { received += 1 }
}
