import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient
import MQTTCore
import Testing

/// Real ChatClients talking through a real broker started by each test: mosquitto and ours.
@Suite("Chat over a live broker", .timeLimit(.minutes(1)))
struct LiveChatTests {
    @Test(
        "two members exchange text and a gift, presence follows join and leave, history keeps both sides",
        arguments: TestBrokerKind.allCases)
    func roomConversation(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("lobby")
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port)
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port)
            let aliceEvents = await EventCollector(alice)
            let bobEvents = await EventCollector(bob)
            try await alice.connect()
            try await bob.connect()
            try await alice.join(room)
            try await bob.join(room)

            let both = [try UserID("alice"), try UserID("bob")]
            #expect(await eventually { await alice.members(of: room).map(\.id) == both })
            #expect(await eventually { await bob.members(of: room).map(\.id) == both })
            #expect(await bob.members(of: room).first?.profile == UserProfile(name: "Alice", level: 5, iconURL: "icon-alice"))
            #expect(await aliceEvents.first { if case .joined(room, let m) = $0 { m.id == both[1] } else { false } } != nil)

            try await alice.send(text: "hello bob", in: room)
            let text = await bobEvents.first { $0.record?.content == .text("hello bob") }
            #expect(text?.record?.sender.id == both[0])
            #expect(text?.record?.direction == .received)

            try await bob.sendGift(name: "rocket", count: 3, url: "https://x/rocket.gif", in: room)
            let gift = await aliceEvents.first { if case .gift = $0 { true } else { false } }
            #expect(gift?.record?.content == .gift(ChatGift(name: "rocket", count: 3, url: "https://x/rocket.gif")))

            // A marker after the gift: once it has arrived, a duplicate gift would have arrived too.
            try await bob.send(text: "marker", in: room)
            #expect(await aliceEvents.first { $0.record?.content == .text("marker") } != nil)
            #expect(await aliceEvents.count { if case .gift = $0 { true } else { false } } == 1)
            // Own messages are not reported back to their sender.
            #expect(await aliceEvents.count { $0.record?.content == .text("hello bob") } == 0)

            // Both sides of the conversation are in each local history, once, newest last.
            let aliceHistory = try await alice.history(room: room).map(\.content)
            #expect(aliceHistory == [.text("hello bob"), .gift(ChatGift(name: "rocket", count: 3, url: "https://x/rocket.gif")), .text("marker")])
            #expect(try await bob.history(room: room).map(\.direction) == [.received, .sent, .sent])

            try await bob.leave(room)
            let left = await aliceEvents.first { $0.presence?.kind == .absent(.leftRoom) }
            #expect(left?.presence?.member.id == both[1])
            #expect(await aliceEvents.first { if case .left(room, let m) = $0 { m.id == both[1] } else { false } } != nil)
            #expect(await alice.members(of: room).map(\.id) == [both[0]])

            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test(
        "a member whose connection dies without DISCONNECT is shown offline through its will",
        arguments: TestBrokerKind.allCases)
    func killedMemberGoesOffline(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let proxy = try DroppableProxy(upstreamPort: broker.port)
            let room = try RoomName("stage")
            let watcher = try makeChatClient("watcher", name: "Watcher", port: broker.port)
            let victim = try makeChatClient("victim", name: "Victim", port: proxy.port, reconnect: false)
            let watcherEvents = await EventCollector(watcher)
            try await watcher.connect()
            try await watcher.join(room)
            try await victim.connect()
            try await victim.join(room)
            let victimID = try UserID("victim")
            #expect(await eventually { await watcher.members(of: room).map(\.id).contains(victimID) })

            proxy.dropAll()  // the broker sees the TCP connection die, as if the process had been killed

            let gone = await watcherEvents.first { $0.presence?.kind == .absent(.wentOffline) }
            #expect(gone?.presence?.member.id == victimID)
            #expect(gone?.presence?.room == room)
            #expect(await watcher.members(of: room).map(\.id) == [try UserID("watcher")])

            // A newcomer sees the same: the retained membership alone does not make the victim present.
            let late = try makeChatClient("late", name: "Late", port: broker.port)
            try await late.connect()
            try await late.join(room)
            #expect(await eventually { await late.members(of: room).count == 2 })
            #expect(await late.members(of: room).map(\.id) == [try UserID("late"), try UserID("watcher")])

            await late.disconnect()
            await watcher.disconnect()
            await victim.disconnect()
        }
    }

    @Test(
        "after a network drop the client reconnects by itself and is present again in the same session",
        arguments: TestBrokerKind.allCases)
    func reconnectRestoresPresence(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let proxy = try DroppableProxy(upstreamPort: broker.port)
            let room = try RoomName("flaky")
            let watcher = try makeChatClient("watcher", name: "Watcher", port: broker.port)
            let roamer = try makeChatClient("roamer", name: "Roamer", port: proxy.port)
            let watcherEvents = await EventCollector(watcher)
            let roamerEvents = await EventCollector(roamer)
            try await watcher.connect()
            try await watcher.join(room)
            try await roamer.connect()
            try await roamer.join(room)
            let roamerID = try UserID("roamer")
            #expect(await eventually { await watcher.members(of: room).map(\.id).contains(roamerID) })

            proxy.cutConnections()

            #expect(await watcherEvents.first { $0.presence?.kind == .absent(.wentOffline) } != nil)
            let isConnected: @Sendable (ChatEvent) -> Bool = { event in
                guard case .connection(.connected) = event else { return false }
                return true
            }
            #expect(await eventually { await roamerEvents.count(where: isConnected) >= 2 })  // initial + reconnect
            #expect(await eventually { await watcher.members(of: room).map(\.id).contains(roamerID) })
            // Subscriptions came back too: the roamer still receives the room's traffic.
            try await watcher.send(text: "welcome back", in: room)
            #expect(await roamerEvents.first { $0.record?.content == .text("welcome back") } != nil)

            await roamer.disconnect()
            await watcher.disconnect()
        }
    }

    @Test(
        "a direct message reaches only its recipient and is kept in both histories",
        arguments: TestBrokerKind.allCases)
    func directMessage(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port)
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port)
            let carol = try makeChatClient("carol", name: "Carol", port: broker.port)
            let bobEvents = await EventCollector(bob)
            let carolEvents = await EventCollector(carol)
            for client in [alice, bob, carol] { try await client.connect() }

            try await alice.sendDirect(text: "for bob only", to: try UserID("bob"))
            try await alice.sendDirect(text: "marker for carol", to: try UserID("carol"))

            let received = await bobEvents.first { if case .directMessage = $0 { true } else { false } }
            #expect(received?.record?.content == .text("for bob only"))
            #expect(received?.record?.conversation == .direct(with: try UserID("alice")))
            #expect(await carolEvents.first { $0.record?.content == .text("marker for carol") } != nil)
            #expect(await carolEvents.count { $0.record?.content == .text("for bob only") } == 0)
            #expect(await bobEvents.count { $0.record?.content == .text("marker for carol") } == 0)

            #expect(try await alice.directMessages(with: try UserID("bob")).map(\.content) == [.text("for bob only")])
            #expect(try await bob.directMessages(with: try UserID("alice")).map(\.direction) == [.received])
            #expect(try await bob.directMessages(with: try UserID("carol")).isEmpty)

            for client in [alice, bob, carol] { await client.disconnect() }
        }
    }

    @Test(
        "QoS per type on the wire, heartbeats at QoS 0 and unstored, redelivered text reported and stored once",
        arguments: TestBrokerKind.allCases)
    func qosHeartbeatsAndDeduplication(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("wire")
            let topic = ChatTopics.standard.name(of: .roomMessages(room))
            let sniffer = try MQTTClient(configuration: MQTTClientConfiguration(clientID: "sniffer", port: broker.port))
            let sniffed = SniffedMessages()
            let stream = sniffer.messages()
            let sniffing = Task { for await message in stream { await sniffed.append(message) } }
            defer { sniffing.cancel() }
            try await sniffer.connect()
            try await sniffer.subscribe(topic, qos: .exactlyOnce)

            let alice = try makeChatClient("alice", name: "Alice", port: broker.port, heartbeat: .milliseconds(100))
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port)
            let bobEvents = await EventCollector(bob)
            try await alice.connect()
            try await bob.connect()
            try await alice.join(room)
            try await bob.join(room)
            try await alice.send(text: "one", in: room)
            try await alice.sendGift(name: "rose", in: room)

            #expect(await eventually { await sniffed.envelopes(of: .heartbeat).count >= 2 })
            #expect(await sniffed.envelopes(of: .heartbeat).allSatisfy { $0.qos == .atMostOnce })
            #expect(await eventually { await !sniffed.envelopes(of: .gift).isEmpty })
            #expect(await sniffed.envelopes(of: .text).map(\.qos) == [.atLeastOnce])
            #expect(await sniffed.envelopes(of: .gift).map(\.qos) == [.exactlyOnce])

            // The same envelope published twice (as a QoS 1 redelivery would) is reported and stored once.
            let text = try #require(await sniffed.envelopes(of: .text).first)
            try await sniffer.publish(topic: topic, payload: text.payload, qos: .atLeastOnce)
            try await sniffer.publish(topic: topic, payload: text.payload, qos: .atLeastOnce)
            try await alice.send(text: "marker", in: room)
            #expect(await bobEvents.first { $0.record?.content == .text("marker") } != nil)
            #expect(await bobEvents.count { $0.record?.content == .text("one") } == 1)
            #expect(try await bob.history(room: room).map(\.content) == [.text("one"), .gift(ChatGift(name: "rose")), .text("marker")])

            await alice.disconnect()
            await bob.disconnect()
            await sniffer.disconnect()
        }
    }
}

/// Raw messages seen by a plain MQTT subscriber, decoded as envelopes.
actor SniffedMessages {
    private var messages: [MQTTMessage] = []

    func append(_ message: MQTTMessage) { messages.append(message) }

    func envelopes(of type: ProtoMessageType) -> [MQTTMessage] {
        messages.filter { (try? ProtoEnvelope(serializedBytes: $0.payload))?.type == type }
    }
}
