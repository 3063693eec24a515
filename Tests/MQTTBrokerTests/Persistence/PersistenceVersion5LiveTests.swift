import Foundation
import LiveTestSupport
import Logging
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Silent unless `BROKER_TEST_LOG` is set.
private let testLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.persist5-test")
    logger.logLevel = ProcessInfo.processInfo.environment["BROKER_TEST_LOG"] == nil ? .critical : .debug
    return logger
}()

/// Runs `body` against a broker persisting to `directory` (one loop, no `$SYS`) and shuts it down afterwards.
private func withBroker(_ directory: String, _ body: (MQTTBrokerServer, SocketAddress) async throws -> Void) async throws {
    try await withInProcessBroker(
        {
            $0.sysInterval = nil
            $0.eventLoopCount = 1
            $0.persistence = PersistenceConfiguration(directory: directory)
        }, logger: testLogger, body)
}

private func temporaryDirectory() throws -> String {
    try makeTemporaryDirectory(prefix: "mqttchat-persist5").path
}

private func connectV5(_ address: SocketAddress, _ clientID: String, cleanStart: Bool, expiry: UInt32?) async throws
    -> (PersistenceV5Client, ConnAckPacket)
{
    let properties = expiry.map { MQTTProperties([.sessionExpiryInterval($0)]) } ?? .none
    return try await PersistenceV5Client.connect(
        to: address,
        ConnectPacket(protocolVersion: .v5, cleanSession: cleanStart, keepAliveSeconds: 30, clientIdentifier: clientID, properties: properties))
}

/// The format version in a persistence file's header.
private func formatVersion(of path: String) throws -> UInt16? {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return ByteBuffer(bytes: data).getInteger(at: 8, as: UInt16.self)
}

@Suite("Persistence of MQTT 5 state against live brokers", .serialized)
struct PersistenceVersion5LiveTests {
    @Test("a v5 session keeps its expiry, No Local and identifier, and its queued message its properties, across a restart and a crash")
    func version5SessionSurvivesRestart() async throws {
        let directory = try temporaryDirectory()
        let crashed = directory + "-crash"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: crashed)
        }
        let published = MQTTProperties([
            .userProperty(key: "colour", value: "blue"), .contentType("text/plain"), .messageExpiryInterval(120),
        ])

        try await withBroker(directory) { _, address in
            let (subscriber, connack) = try await connectV5(address, "v5-sub", cleanStart: false, expiry: 100)
            #expect(connack.reasonCode == .success && !connack.sessionPresent)
            let suback = try await subscriber.subscribe(
                [.init(topicFilter: "v5/#", qos: .atLeastOnce, noLocal: true)], id: 1,
                properties: MQTTProperties([.subscriptionIdentifier(7)]))
            #expect(suback.reasonCodes.map(\.rawValue) == [1])
            // DISCONNECT changes the Session Expiry Interval: the change is what survives.
            try await subscriber.disconnect(properties: MQTTProperties([.sessionExpiryInterval(300)]))

            let (publisher, _) = try await connectV5(address, "v5-pub", cleanStart: true, expiry: nil)
            try await publisher.publishQoS1("v5/t", "queued", id: 1, properties: published)
            await publisher.close()
            // What is on disk now, as a kill -9 leaves it: the log, not the snapshot of a graceful stop.
            try FileManager.default.copyItem(atPath: directory, toPath: crashed)
        }

        // After a graceful stop (from the snapshot) and after a crash (replaying the log).
        for restarted in [directory, crashed] {
            try await Self.checkRestoredSession(in: restarted)
        }
    }

    private static func checkRestoredSession(in directory: String) async throws {
        try await withBroker(directory) { server, address in
            let restored = try await server.withCore { core in
                core.session(forClientID: "v5-sub").map { ($0.expiryInterval, $0.protocolVersion, $0.subscriptionOptions, $0.expiryTask != nil) }
            }
            #expect(restored??.0 == 300)
            #expect(restored??.1 == .v5)
            #expect(restored??.2 == ["v5/#": SubscriptionOptions(noLocal: true, retainAsPublished: false, identifier: 7)])
            #expect(restored??.3 == true)  // offline after the restart: its expiry timer runs

            let (subscriber, connack) = try await connectV5(address, "v5-sub", cleanStart: false, expiry: 300)
            #expect(connack.sessionPresent)
            let message = try await subscriber.nextPublish()
            #expect(message.topic == "v5/t" && String(buffer: message.payload) == "queued")
            #expect(message.properties.userProperties.map { "\($0.0)=\($0.1)" } == ["colour=blue"])
            #expect(message.properties.entries.contains(.contentType("text/plain")))
            #expect(message.properties.subscriptionIdentifiers == [7])
            let left = try #require(message.properties.messageExpiryInterval)
            #expect(left > 0 && left <= 120)

            // No Local still holds: the subscriber's own message is not sent back; another client's is.
            try await subscriber.publishQoS1("v5/own", "mine", id: 5)
            let (other, _) = try await connectV5(address, "v5-other", cleanStart: true, expiry: nil)
            try await other.publishQoS1("v5/other", "theirs", id: 1)
            let next = try await subscriber.nextPublish()
            #expect(next.topic == "v5/other" && next.properties.subscriptionIdentifiers == [7])
            await other.close()
            await subscriber.close()
        }
    }

    @Test("a v5 session with a 2 s expiry is gone 2 s after a restart, and stays gone")
    func shortExpiryEndsAfterRestart() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withBroker(directory) { _, address in
            let (client, _) = try await connectV5(address, "v5-short", cleanStart: false, expiry: 2)
            _ = try await client.subscribe([.init(topicFilter: "short/#", qos: .atLeastOnce)], id: 1)
            try await client.disconnect()
        }
        let started = ContinuousClock.now
        try await withBroker(directory) { server, _ in
            let present = try await server.withCore { $0.session(forClientID: "v5-short") != nil }
            // Restored (unless the machine was so slow that its 2 s already ran out during the start).
            if ContinuousClock.now - started < .milliseconds(1500) { #expect(present == true) }
            let gone = try await poll(every: .milliseconds(100), for: .seconds(10)) {
                try await server.withCore { $0.session(forClientID: "v5-short") == nil } == true
            }
            #expect(gone)
            #expect(ContinuousClock.now - started >= .seconds(2))
        }
        try await withBroker(directory) { server, _ in
            let gone = try await server.withCore { $0.session(forClientID: "v5-short") == nil }
            #expect(gone == true)
        }
    }

    @Test("a version-1 directory is read and rewritten in the current version")
    func version1DirectoryIsUpgraded() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let snapshot = directory + "/mqttchat.snapshot"
        try Data(goldenVersion1Snapshot).write(to: URL(fileURLWithPath: snapshot))
        #expect(try formatVersion(of: snapshot) == 1)

        try await withBroker(directory) { server, _ in
            let session = try await server.withCore { core in
                core.session(forClientID: "g1").map { ($0.protocolVersion, $0.expiryInterval, $0.subscriptions) }
            }
            #expect(session??.0 == .v3_1_1)
            #expect(session??.1 == .max)  // a 3.1.1 persistent session (no persistent_client_expiration)
            #expect(session??.2 == ["g/#": .atLeastOnce])
            // The compaction at start already rewrote both files.
            #expect(try formatVersion(of: snapshot) == PersistenceFileFormat.version)
            #expect(try formatVersion(of: directory + "/mqttchat.log") == PersistenceFileFormat.version)
        }
        let bytes = ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: snapshot)))
        let read = try PersistenceFileFormat.read(bytes, path: snapshot, kind: .snapshot)
        #expect(read.version == PersistenceFileFormat.version && read.damage == nil)
        #expect(read.records.contains(.sessionLifetime(clientID: "g1", protocolVersion: .v3_1_1, expiryInterval: .max)))

        try await withBroker(directory) { server, address in
            let (client, connack) = try await LiveClient.connect(
                to: address, ConnectPacket(cleanSession: false, keepAliveSeconds: 30, clientIdentifier: "g1"))
            #expect(connack.sessionPresent)
            let message = try await client.nextPublish()
            #expect(message.topic == "g/x" && String(buffer: message.payload) == "hi")
            await client.close()
            #expect(try await server.withCore { $0.retainedStore.allMessages().map(\.topic) } == ["g/r"])
        }
    }

    @Test("queued and retained messages that expired while the broker was down are dropped at recovery")
    func expiredMessagesAreDropped() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let now = WallClockTime.now().milliseconds
        let past = WallClockTime(milliseconds: now - 1000)
        let future = WallClockTime(milliseconds: now + 60_000)
        func message(_ id: UInt64, _ payload: String, expiresAt: WallClockTime) -> PersistentRecord {
            .message(
                StoredMessage(
                    id: id, topic: "e/\(payload)", qos: .atLeastOnce, retain: false, payload: ByteBuffer(string: payload),
                    mustRoute: false, origin: nil, properties: MQTTProperties([.userProperty(key: "n", value: payload)]),
                    expiresAt: expiresAt))
        }
        let records: [PersistentRecord] = [
            .retained(topic: "e/r-old", qos: .atMostOnce, payload: ByteBuffer(string: "old"), expiresAt: past),
            .retained(topic: "e/r-new", qos: .atMostOnce, payload: ByteBuffer(string: "new"), expiresAt: future),
            .sessionCreated(clientID: "e1"),
            .sessionLifetime(clientID: "e1", protocolVersion: .v5, expiryInterval: .max),
            .subscribed(clientID: "e1", filter: "e/#", qos: .atLeastOnce),
            message(1, "expired", expiresAt: past),
            .delivery(clientID: "e1", storeID: 1, qos: .atLeastOnce, retain: false, packetID: 0, state: .queued),
            message(2, "alive", expiresAt: future),
            .delivery(clientID: "e1", storeID: 2, qos: .atLeastOnce, retain: false, packetID: 0, state: .queued),
        ]
        var file = PersistenceFileFormat.header(kind: .snapshot, generation: 1)
        for record in records + [.snapshotEnd(recordCount: UInt64(records.count))] {
            PersistenceFileFormat.appendRecord(record, to: &file)
        }
        try Data(file.readableBytesView).write(to: URL(fileURLWithPath: directory + "/mqttchat.snapshot"))

        try await withBroker(directory) { server, address in
            #expect(try await server.withCore { $0.retainedStore.allMessages().map(\.topic) } == ["e/r-new"])
            let (client, connack) = try await connectV5(address, "e1", cleanStart: false, expiry: .max)
            #expect(connack.sessionPresent)
            let first = try await client.nextPublish()
            #expect(String(buffer: first.payload) == "alive")
            #expect(first.properties.userProperties.map { $0.1 } == ["alive"])
            #expect((first.properties.messageExpiryInterval ?? 0) <= 60 && (first.properties.messageExpiryInterval ?? 0) > 0)
            let (other, _) = try await connectV5(address, "e-pub", cleanStart: true, expiry: nil)
            try await other.publishQoS1("e/later", "later", id: 1)
            #expect(String(buffer: try await client.nextPublish().payload) == "later")  // nothing else was queued
            await other.close()
            await client.close()
        }
    }
}
