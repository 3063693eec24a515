import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient
import Testing

/// Presence by heartbeat against real brokers, at MQTT 5 and 3.1.1: it must not need the retained cache, which a
/// clustered broker keeps per node. Heartbeats are short here (a silent member is dropped after 3 of them); every
/// wait is a bounded poll, never an exact time.
@Suite("Presence by heartbeat over a live broker", .timeLimit(.minutes(1)))
struct PresenceLiveTests {
    enum Version: String, CaseIterable, CustomStringConvertible, Sendable {
        case mqtt5
        case mqtt311
        var description: String { rawValue }
        var protocolVersion: MQTTClientProtocolVersion { self == .mqtt5 ? .v5 : .v3_1_1 }
    }

    static let interval = Duration.milliseconds(300)

    func client(
        _ id: String, port: Int, _ version: Version, heartbeat: Duration? = interval, reconnect: Bool = true
    ) throws -> ChatClient {
        try makeChatClient(id, name: id.capitalized, port: port, heartbeat: heartbeat, reconnect: reconnect) {
            $0.mqtt.protocolVersion = version.protocolVersion
            $0.roomHistoryTimeout = nil
        }
    }

    func ids(_ names: String...) throws -> [UserID] { try names.map { try UserID($0) } }

    @Test(
        "with no retained messages (like a cluster node) members see each other; hung: dropped after 3 heartbeats; killed: at once by its will",
        arguments: Version.allCases)
    func noRetainedMessagesAtAll(version: Version) async throws {
        try await withBroker(.mqttchat, options: BrokerOptions(lines: ["retain_available false"])) { broker in
            let room = try RoomName("cluster")
            let hungProxy = try DroppableProxy(upstreamPort: broker.port)
            let killedProxy = try DroppableProxy(upstreamPort: broker.port)
            let alice = try client("alice", port: broker.port, version)
            let hung = try client("hung", port: hungProxy.port, version, reconnect: false)
            let killed = try client("killed", port: killedProxy.port, version, reconnect: false)
            let aliceEvents = await EventCollector(alice)
            for member in [alice, hung, killed] {
                try await member.connect()
                try await member.join(room)
            }
            let everyone = try ids("alice", "hung", "killed")
            for member in [alice, hung, killed] {
                #expect(await eventually { await member.members(of: room).map(\.id) == everyone })
            }

            hungProxy.freeze()  // no will for a long while: only missed heartbeats can tell
            let timedOut = await aliceEvents.first(timeout: .seconds(5)) { $0.presence?.kind == .absent(.timedOut) }
            #expect(timedOut?.presence?.member.id == everyone[1])

            killedProxy.dropAll()  // the will is published live (its retained copy is not kept): dropped at once
            let gone = await aliceEvents.first(timeout: .seconds(5)) { $0.presence?.kind == .absent(.wentOffline) }
            #expect(gone?.presence?.member.id == everyone[2])
            #expect(await alice.members(of: room).map(\.id) == [everyone[0]])

            hungProxy.dropAll()  // so its goodbye fails fast instead of waiting on a connection that relays nothing
            for member in [alice, hung, killed] { await member.disconnect() }
        }
    }

    @Test(
        "a newcomer that gets no retained membership learns the room from the answers to its JOIN within one heartbeat period",
        arguments: TestBrokerKind.allCases, Version.allCases)
    func newcomerLearnsByWhoIsHere(kind: TestBrokerKind, version: Version) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("newcomers")
            // Long heartbeats on the old members: within the bound below only answers to the JOIN can arrive.
            let slow = Duration.seconds(6)
            let alice = try client("alice", port: broker.port, version, heartbeat: slow)
            let bob = try client("bob", port: broker.port, version, heartbeat: slow)
            for member in [alice, bob] {
                try await member.connect()
                try await member.join(room)
            }
            let pair = try ids("alice", "bob")
            #expect(await eventually { await alice.members(of: room).map(\.id) == pair })

            // Wipe the retained cache, as a member sees it on another node of a cluster: the broker restarts
            // without persistence, the members reconnect by themselves (same sessions) and say ONLINE again, but
            // their retained memberships are gone.
            let aliceEvents = await EventCollector(alice)
            let bobEvents = await EventCollector(bob)
            try await broker.restart()
            let isConnected: @Sendable (ChatEvent) -> Bool = { event in
                guard case .connection(.connected) = event else { return false }
                return true
            }
            for events in [aliceEvents, bobEvents] {
                #expect(await eventually(timeout: .seconds(10)) { await events.count(where: isConnected) >= 1 })
            }
            #expect(await eventually(timeout: .seconds(10)) { await bob.members(of: room).map(\.id) == pair })

            let carol = try client("carol", port: broker.port, version)
            try await carol.connect()
            let joinedAt = ContinuousClock.now
            try await carol.join(room)
            let everyone = try ids("alice", "bob", "carol")
            #expect(await eventually(timeout: slow) { await carol.members(of: room).map(\.id) == everyone })
            // One heartbeat period of the old members, which did not heartbeat on their own meanwhile.
            #expect(ContinuousClock.now - joinedAt < slow)
            #expect(await eventually { await alice.members(of: room).map(\.id) == everyone })

            for member in [alice, bob, carol] { await member.disconnect() }
        }
    }

    @Test(
        "who is here: at MQTT 5 the answers go to the newcomer only (Response Topic), at 3.1.1 to the room",
        arguments: TestBrokerKind.allCases, Version.allCases)
    func whoIsHereAnswerRoute(kind: TestBrokerKind, version: Version) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("answers")
            let roomTopic = ChatTopics.standard.name(of: .roomMessages(room))
            let repliesTopic = ChatTopics.standard.name(of: .presenceReplies(try UserID("carol")))
            let sniffer = try rawV5Client("sniffer", port: broker.port)
            let sniffed = await ReceivedMessages(sniffer)
            try await sniffer.connect()
            try await sniffer.subscribe(roomTopic, qos: .atMostOnce)
            try await sniffer.subscribe(repliesTopic, qos: .atMostOnce)

            // Alice's own periodic heartbeat is far away (6 s): a heartbeat from her now is an answer.
            let alice = try client("alice", port: broker.port, version, heartbeat: .seconds(6))
            let carol = try client("carol", port: broker.port, version, heartbeat: .seconds(6))
            try await alice.connect()
            try await alice.join(room)
            try await carol.connect()
            try await carol.join(room)
            let aliceID = try UserID("alice")
            #expect(await eventually { await carol.members(of: room).map(\.id).contains(aliceID) })
            #expect(await eventually { await !sniffed.messages(of: .heartbeat).isEmpty })

            let answers = await sniffed.messages(of: .heartbeat)
            let fromAlice = answers.filter { (try? ProtoEnvelope(serializedBytes: $0.payload))?.senderID == "alice" }
            #expect(!fromAlice.isEmpty)
            switch version {
            case .mqtt5:
                #expect(fromAlice.allSatisfy { $0.topic == repliesTopic })
                #expect(fromAlice.allSatisfy { $0.properties.correlationData != nil })
            case .mqtt311:
                #expect(fromAlice.allSatisfy { $0.topic == roomTopic })
            }
            for member in [alice, carol] { await member.disconnect() }
            await sniffer.disconnect()
            await sniffed.stop()
        }
    }

    @Test(
        "a member whose connection hangs without a will is dropped after about 3 heartbeat intervals",
        arguments: TestBrokerKind.allCases, Version.allCases)
    func hungMemberTimesOut(kind: TestBrokerKind, version: Version) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("timeouts")
            let proxy = try DroppableProxy(upstreamPort: broker.port)
            // A little longer than elsewhere: the assertion before the freeze must not see a late heartbeat on a
            // loaded machine as a timeout.
            let interval = Duration.milliseconds(500)
            let watcher = try client("watcher", port: broker.port, version, heartbeat: interval)
            let hung = try client("hung", port: proxy.port, version, heartbeat: interval, reconnect: false)
            let watcherEvents = await EventCollector(watcher)
            try await watcher.connect()
            try await watcher.join(room)
            try await hung.connect()
            try await hung.join(room)
            let hungID = try UserID("hung")
            #expect(await eventually { await watcher.members(of: room).map(\.id).contains(hungID) })
            // Heartbeats keep it present well beyond the timeout.
            try await Task.sleep(for: interval * 4)
            #expect(await watcherEvents.count { $0.presence?.member.id == hungID && $0.presence?.kind != .present } == 0)

            let frozenAt = ContinuousClock.now
            proxy.freeze()
            let dropped = await watcherEvents.first(timeout: .seconds(5)) { $0.presence?.kind == .absent(.timedOut) }
            #expect(dropped?.presence?.member.id == hungID)
            // About 3 intervals (plus the sweep's quarter): clearly before the keep-alive (5 s) could bring the will.
            let took = ContinuousClock.now - frozenAt
            #expect(took >= interval && took < .seconds(4), "dropped after \(took)")
            #expect(await watcher.members(of: room).map(\.id) == [try UserID("watcher")])

            proxy.dropAll()
            await watcher.disconnect()
            await hung.disconnect()
        }
    }
}
