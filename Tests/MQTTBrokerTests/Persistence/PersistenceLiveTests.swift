import Foundation
import LiveTestSupport
import Logging
import MQTTCore
import NIOCore
import NIOPosix
import Testing

@testable import MQTTBroker

/// The persistence tests' logger: silent unless `BROKER_TEST_LOG` is set, then down to debug.
private let persistenceTestLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.persist-test")
    logger.logLevel = ProcessInfo.processInfo.environment["BROKER_TEST_LOG"] == nil ? .critical : .debug
    return logger
}()

/// Makes `configuration` a persistent broker's: persistence in `directory`, one loop, no `$SYS`.
private func makePersistent(_ configuration: inout BrokerConfiguration, in directory: String) {
    configuration.sysInterval = nil
    configuration.eventLoopCount = 1
    configuration.persistence = PersistenceConfiguration(directory: directory)
}

/// A broker with persistence in `directory` on an ephemeral loopback port; the caller shuts it down. One that fails
/// to start is shut down first (which releases the directory lock if recovery got that far).
private func startPersistentBroker(
    _ directory: String, _ configure: (inout BrokerConfiguration) -> Void = { _ in }
) async throws -> (MQTTBrokerServer, SocketAddress) {
    let (server, addresses) = try await startInProcessBroker(
        loopbackBrokerConfiguration {
            makePersistent(&$0, in: directory)
            configure(&$0)
        }, logger: persistenceTestLogger)
    return (server, addresses[0])
}

/// Runs `body` against a persistent broker on `directory` and shuts the broker down afterwards, also when `body`
/// throws (so the directory lock is released for the next broker of the test).
private func withPersistentBroker(
    _ directory: String, configure: (inout BrokerConfiguration) -> Void = { _ in },
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> Void
) async throws {
    try await withInProcessBroker(
        {
            makePersistent(&$0, in: directory)
            configure(&$0)
        }, logger: persistenceTestLogger, body)
}

/// Leaves a persistent session for `clientID` subscribed to `filter` and offline (DISCONNECT, so no will), for
/// messages to queue up in.
private func parkSubscriber(_ address: SocketAddress, _ clientID: String, filter: String, qos: QoS) async throws {
    let (subscriber, _) = try await connect(address, clientID, clean: false)
    _ = try await subscriber.subscribe(filter, qos: qos)
    try await subscriber.send(.disconnect(DisconnectPacket()))
    await subscriber.close()
}

/// A fresh temporary directory, removed by the caller.
private func temporaryDirectory() throws -> String {
    try makeTemporaryDirectory(prefix: "mqttchat-persist").path
}

/// What is on disk right now, as a crash would leave it: a copy of the directory (the lock is not copied as held).
private func crashCopy(of directory: String) throws -> String {
    let copy = directory + "-crash"
    try FileManager.default.copyItem(atPath: directory, toPath: copy)
    return copy
}

private func connect(_ address: SocketAddress, _ clientID: String, clean: Bool) async throws -> (LiveClient, Bool) {
    let (client, connack) = try await LiveClient.connect(
        to: address, ConnectPacket(cleanSession: clean, keepAliveSeconds: 30, clientIdentifier: clientID))
    #expect(connack.returnCode == .accepted)
    return (client, connack.sessionPresent)
}

/// Publishes QoS 1 and waits for its PUBACK.
private func publishQoS1(_ client: LiveClient, _ topic: String, _ payload: String, id: UInt16, retain: Bool = false) async throws {
    try await client.send(.publish(PublishPacket(topic: topic, payload: ByteBuffer(string: payload), qos: .atLeastOnce, retain: retain, packetID: id)))
    guard case .puback(let ack) = try await client.next(), ack.packetID == id else { throw LiveClientError.connectionClosed }
}

/// Publishes QoS 2 through PUBCOMP.
private func publishQoS2(_ client: LiveClient, _ topic: String, _ payload: String, id: UInt16) async throws {
    try await client.send(.publish(PublishPacket(topic: topic, payload: ByteBuffer(string: payload), qos: .exactlyOnce, packetID: id)))
    guard case .pubrec = try await client.next() else { throw LiveClientError.connectionClosed }
    try await client.send(.pubrel(PubRelPacket(packetID: id)))
    guard case .pubcomp = try await client.next() else { throw LiveClientError.connectionClosed }
}

/// Receives `count` PUBLISHes, acknowledging like a well-behaved client (PUBACK; PUBREC, then PUBCOMP for each
/// PUBREL), until every QoS 2 exchange is complete. PUBLISHes and PUBRELs may interleave (the window holds several).
private func collect(_ client: LiveClient, _ count: Int) async throws -> [PublishPacket] {
    var received: [PublishPacket] = []
    var awaitingRelease = Set<UInt16>()
    while received.count < count || !awaitingRelease.isEmpty {
        switch try await client.next() {
        case .publish(let publish):
            received.append(publish)
            guard let id = publish.packetID else { continue }
            if publish.qos == .exactlyOnce {
                awaitingRelease.insert(id)
                try await client.send(.pubrec(PubRecPacket(packetID: id)))
            } else {
                try await client.send(.puback(PubAckPacket(packetID: id)))
            }
        case .pubrel(let release):
            awaitingRelease.remove(release.packetID)
            try await client.send(.pubcomp(PubCompPacket(packetID: release.packetID)))
        default:
            throw LiveClientError.connectionClosed
        }
    }
    return received
}

/// Receives one PUBLISH and completes its exchange.
private func receive(_ client: LiveClient) async throws -> PublishPacket {
    let all = try await collect(client, 1)
    guard let first = all.first else { throw LiveClientError.connectionClosed }
    return first
}

private func payloadString(_ publish: PublishPacket) -> String {
    String(buffer: publish.payload)
}

@Suite("Persistence against live brokers", .serialized)
struct PersistenceLiveTests {
    @Test("a persistent session, its queued QoS 1/2 messages and retained messages survive a restart")
    func restartKeepsSessionsAndRetained() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        try await withPersistentBroker(directory) { first, address in
            let (subscriber, present) = try await connect(address, "persist-sub", clean: false)
            #expect(present == false)
            #expect(try await subscriber.subscribe("p/q1", qos: .atLeastOnce, packetID: 1).returnCodes == [.granted(.atLeastOnce)])
            #expect(try await subscriber.subscribe("p/q2", qos: .exactlyOnce, packetID: 2).returnCodes == [.granted(.exactlyOnce)])
            try await subscriber.send(.disconnect(DisconnectPacket()))
            await subscriber.close()

            let (publisher, _) = try await connect(address, "persist-pub", clean: true)
            try await publishQoS1(publisher, "p/r", "kept", id: 1, retain: true)
            try await publishQoS1(publisher, "p/q1", "m1", id: 2)
            try await publishQoS2(publisher, "p/q2", "m2", id: 3)
            await publisher.close()
        }

        try await withPersistentBroker(directory) { second, address2 in
            let (subscriber, present) = try await connect(address2, "persist-sub", clean: false)
            #expect(present == true)
            let one = try await receive(subscriber)
            let two = try await receive(subscriber)
            #expect([payloadString(one), payloadString(two)] == ["m1", "m2"])
            #expect([one.qos, two.qos] == [.atLeastOnce, .exactlyOnce])
            #expect(try await subscriber.subscribe("p/r", qos: .atLeastOnce, packetID: 3).returnCodes == [.granted(.atLeastOnce)])
            let retained = try await receive(subscriber)
            #expect(payloadString(retained) == "kept" && retained.retain)
            await subscriber.close()
            // A clean session is never stored: after a restart it is gone.
            #expect(try await second.withCore { $0.session(forClientID: "persist-pub") == nil } == true)
        }
    }

    @Test("acknowledged QoS 1/2 messages are on disk before the acknowledgement (state copied mid-run, as a crash leaves it)")
    func acknowledgedMeansDurable() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var copy = ""
        try await withPersistentBroker(directory) { first, address in
            try await parkSubscriber(address, "durable-sub", filter: "d/#", qos: .exactlyOnce)
            let (publisher, _) = try await connect(address, "durable-pub", clean: false)
            for index in 1...20 {
                if index.isMultiple(of: 2) {
                    try await publishQoS2(publisher, "d/\(index)", "n\(index)", id: UInt16(index))
                } else {
                    try await publishQoS1(publisher, "d/\(index)", "n\(index)", id: UInt16(index))
                }
            }
            copy = try crashCopy(of: directory)
            await publisher.close()
        }
        defer { try? FileManager.default.removeItem(atPath: copy) }

        try await withPersistentBroker(copy) { second, address2 in
            let (subscriber, present) = try await connect(address2, "durable-sub", clean: false)
            #expect(present)
            let payloads = try await collect(subscriber, 20).map(payloadString)
            #expect(payloads == (1...20).map { "n\($0)" })
            await subscriber.close()
        }
    }

    @Test("an inbound QoS 2 id awaiting PUBREL survives a crash: the DUP re-send is not delivered twice, PUBREL gets PUBCOMP")
    func inboundQoS2SurvivesCrash() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var copy = ""
        try await withPersistentBroker(directory) { first, address in
            try await parkSubscriber(address, "q2-sub", filter: "q2/t", qos: .exactlyOnce)
            let (publisher, _) = try await connect(address, "q2-pub", clean: false)
            try await publisher.send(.publish(PublishPacket(topic: "q2/t", payload: ByteBuffer(string: "once"), qos: .exactlyOnce, packetID: 77)))
            guard case .pubrec(let rec) = try await publisher.next() else { throw LiveClientError.connectionClosed }
            #expect(rec.packetID == 77)
            copy = try crashCopy(of: directory)  // the broker "crashes" before PUBREL
            await publisher.close()
        }
        defer { try? FileManager.default.removeItem(atPath: copy) }

        try await withPersistentBroker(copy) { second, address2 in
            let (subscriber, _) = try await connect(address2, "q2-sub", clean: false)
            #expect(payloadString(try await receive(subscriber)) == "once")
            let (publisher, present) = try await connect(address2, "q2-pub", clean: false)
            #expect(present)
            #expect(try await second.withCore { $0.session(forClientID: "q2-pub")?.inboundQoS2.pendingIDs } == [77])
            try await publisher.send(
                .publish(PublishPacket(topic: "q2/t", payload: ByteBuffer(string: "once"), qos: .exactlyOnce, dup: true, packetID: 77)))
            guard case .pubrec(let rec) = try await publisher.next() else { throw LiveClientError.connectionClosed }
            #expect(rec.packetID == 77)
            try await publisher.send(.pubrel(PubRelPacket(packetID: 77)))
            guard case .pubcomp(let comp) = try await publisher.next() else { throw LiveClientError.connectionClosed }
            #expect(comp.packetID == 77)
            await #expect(throws: LiveClientError.timedOut) { try await subscriber.next(timeout: .milliseconds(400)) }
            await subscriber.close()
            await publisher.close()
        }
    }

    @Test("an outbound QoS 2 message keeps its packet id across a crash and a PUBREC'd one is completed with PUBREL")
    func outboundQoS2KeepsPacketIDs() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (first, address) = try await startPersistentBroker(directory)
        var copy = ""
        var firstID: UInt16 = 0
        var secondID: UInt16 = 0
        do {
            let (subscriber, _) = try await connect(address, "out-sub", clean: false)
            _ = try await subscriber.subscribe("o/t", qos: .exactlyOnce)
            let (publisher, _) = try await connect(address, "out-pub", clean: true)
            try await publishQoS2(publisher, "o/t", "a", id: 1)
            try await publishQoS2(publisher, "o/t", "b", id: 2)
            let a = try await subscriber.next()
            let b = try await subscriber.next()
            guard case .publish(let pa) = a, case .publish(let pb) = b, let ida = pa.packetID, let idb = pb.packetID else {
                throw LiveClientError.connectionClosed
            }
            firstID = ida
            secondID = idb
            try await subscriber.send(.pubrec(PubRecPacket(packetID: ida)))
            guard case .pubrel(let rel) = try await subscriber.next(), rel.packetID == ida else { throw LiveClientError.connectionClosed }
            copy = try crashCopy(of: directory)  // "a" awaits PUBCOMP, "b" awaits PUBREC
            await subscriber.close()
            await publisher.close()
        } catch {
            await first.shutdown()
            throw error
        }
        await first.shutdown()
        defer { try? FileManager.default.removeItem(atPath: copy) }

        try await withPersistentBroker(copy) { second, address2 in
            let (subscriber, present) = try await connect(address2, "out-sub", clean: false)
            #expect(present)
            // Resume order: PUBREL for "a", then "b" again with its packet id and DUP set.
            guard case .pubrel(let rel) = try await subscriber.next() else { throw LiveClientError.connectionClosed }
            #expect(rel.packetID == firstID)
            guard case .publish(let again) = try await subscriber.next() else { throw LiveClientError.connectionClosed }
            #expect(again.packetID == secondID && again.dup && payloadString(again) == "b")
            await subscriber.close()
        }
    }

    @Test("compaction into snapshots keeps every queued message; recovery time of a few thousand records is measured")
    func compactionKeepsEverything() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = 3000
        var copy = ""
        try await withPersistentBroker(directory, configure: {
            $0.persistence?.compactAfterLogBytes = 64 * 1024
            $0.maxQueuedMessages = 0
        }) { first, address in
            try await parkSubscriber(address, "compact-sub", filter: "c/#", qos: .atLeastOnce)
            let (publisher, _) = try await connect(address, "compact-pub", clean: true)
            // Pipelined: up to 100 unacknowledged publishes, so batches carry many records per fsync.
            var acked = 0
            for index in 1...count {
                try await publisher.send(
                    .publish(PublishPacket(topic: "c/\(index % 10)", payload: ByteBuffer(string: "m\(index)"), qos: .atLeastOnce, packetID: UInt16(index % 60000 + 1))))
                if index - acked >= 100 {
                    guard case .puback = try await publisher.next() else { throw LiveClientError.connectionClosed }
                    acked += 1
                }
            }
            while acked < count {
                guard case .puback = try await publisher.next() else { throw LiveClientError.connectionClosed }
                acked += 1
            }
            let statistics = try await first.withCore { $0.persistence?.statistics }
            #expect((statistics??.compactions ?? 0) >= 2)
            print("persistence: \(count) QoS 1 messages: \(String(describing: statistics))")
            copy = try crashCopy(of: directory)
            await publisher.close()
        }
        defer { try? FileManager.default.removeItem(atPath: copy) }

        let started = ContinuousClock.now
        try await withPersistentBroker(copy, configure: { $0.maxQueuedMessages = 0 }) { second, address2 in
            print("persistence: recovered \(count) queued messages in \(ContinuousClock.now - started)")
            #expect(try await second.withCore { $0.session(forClientID: "compact-sub")?.outbound.queuedCount } == count)
            let (subscriber, _) = try await connect(address2, "compact-sub", clean: false)
            var seen = Set<String>()
            for _ in 1...count {
                seen.insert(payloadString(try await subscriber.nextPublish()))
            }
            #expect(seen.count == count)
            await subscriber.close()
        }
    }

    @Test("a second broker on a directory in use is refused; a damaged log in the middle refuses to start")
    func refusals() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var copy = ""
        try await withPersistentBroker(directory) { first, address in
            await #expect(throws: PersistenceError.directoryLocked(path: directory)) {
                _ = try await startPersistentBroker(directory)
            }
            try await parkSubscriber(address, "dmg-sub", filter: "x/#", qos: .atLeastOnce)
            let (publisher, _) = try await connect(address, "dmg-pub", clean: true)
            for index in 1...5 { try await publishQoS1(publisher, "x/\(index)", "v\(index)", id: UInt16(index)) }
            copy = try crashCopy(of: directory)
            await publisher.close()
        }
        defer { try? FileManager.default.removeItem(atPath: copy) }

        // Flip a byte inside the third record (sessionCreated and subscribed come first).
        let logPath = copy + "/mqttchat.log"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: logPath))
        var offset = PersistenceFileFormat.headerSize
        for _ in 0..<2 {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 8 + length
        }
        #expect(bytes.count > offset + 20)
        bytes[offset + 9] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: logPath))
        do {
            let (server, _) = try await startPersistentBroker(copy)
            await server.shutdown()
            Issue.record("the broker started on a damaged log")
        } catch let error as PersistenceError {
            guard case .damagedLog(let path, let damage) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(path == logPath && damage.recordNumber == 3 && damage.offset == offset)
        }
        // With the override it starts with the two records before the damage and moves the log aside.
        let (server, _) = try await startPersistentBroker(copy) { $0.persistence?.recoverPartial = true }
        #expect(try await server.withCore { $0.session(forClientID: "dmg-sub") != nil } == true)
        await server.shutdown()
        let names = try FileManager.default.contentsOfDirectory(atPath: copy)
        #expect(names.contains { $0.hasPrefix("mqttchat.log.damaged-") })
    }
}
