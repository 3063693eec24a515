import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient
import MQTTCore
import Testing

/// The chat layer's use of MQTT 5 (No Local, properties, message and session expiry), against mosquitto and ours.
@Suite("Chat on MQTT 5", .timeLimit(.minutes(1)))
struct MQTT5ChatTests {
    @Test(
        "with No Local a member's own room messages never come back over the wire; at 3.1.1 they all do",
        arguments: TestBrokerKind.allCases, [MQTTClientProtocolVersion.v5, .v3_1_1])
    func noLocal(kind: TestBrokerKind, version: MQTTClientProtocolVersion) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("echo")
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port, heartbeat: .milliseconds(100)) {
                $0.mqtt.protocolVersion = version
            }
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port)
            let bobEvents = await EventCollector(bob)
            try await alice.connect()
            try await bob.connect()
            try await bob.join(room)
            try await alice.join(room)
            #expect(await alice.protocolVersion == version)
            for line in ["one", "two", "three"] { try await alice.send(text: line, in: room) }
            try await alice.sendGift(name: "rose", in: room)
            try await alice.send(text: "marker", in: room)
            // Once bob has the marker and a few heartbeats went by, an echo to alice would have arrived too.
            #expect(await bobEvents.first { $0.record?.content == .text("marker") } != nil)
            // The gift (QoS 2) may come after the marker (QoS 1).
            #expect(await eventually { await bobEvents.count { $0.record?.sender.id == alice.me.id } == 5 })
            try await Task.sleep(for: .milliseconds(400))
            if version == .v5 {
                #expect(await alice.ownMessagesReceivedBack == 0)
            } else {
                // join + 4 texts + gift, and heartbeats: every one crossed the network twice.
                #expect(await eventually { await alice.ownMessagesReceivedBack >= 7 })
            }
            #expect(try await alice.history(room: room).count == 5)
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test(
        "every chat publish carries the envelope content type, payload format 0 and the schema user property",
        arguments: TestBrokerKind.allCases)
    func publishProperties(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("props")
            let sniffer = try rawV5Client("sniffer", port: broker.port)
            let sniffed = await ReceivedMessages(sniffer)
            try await sniffer.connect()
            try await sniffer.subscribe("mqttchat/#", qos: .exactlyOnce)

            let alice = try makeChatClient("alice", name: "Alice", port: broker.port, heartbeat: .milliseconds(100)) {
                $0.ephemeralMessageExpiry = 20
                $0.directMessageRetention = 3600
            }
            try await alice.connect()
            try await alice.join(room)
            try await alice.send(text: "hello", in: room)
            try await alice.sendGift(name: "rose", in: room)
            try await alice.sendDirect(text: "psst", to: try UserID("bob"))
            #expect(await eventually { await sniffed.messages(of: .heartbeat).count >= 1 })
            #expect(await eventually { await sniffed.messages(of: .direct).count == 1 })

            let types: [ProtoMessageType] = [.status, .join, .text, .gift, .direct, .heartbeat]
            for type in types {
                let messages = await sniffed.messages(of: type)
                #expect(!messages.isEmpty, "no \(type) seen")
                for message in messages {
                    #expect(message.properties.contentType == ChatWireProperties.envelopeContentType, "\(type)")
                    #expect(message.properties.payloadFormat == .bytes, "\(type)")
                    #expect(
                        message.properties.userProperties.contains(
                            MQTTUserProperty(ChatWireProperties.schemaVersionProperty, ChatWireProperties.schemaVersion)),
                        "\(type)")
                }
            }
            // Expiry only where a stale message is worse than none (or, for direct messages, bounded retention).
            let roomTopic = ChatTopics.standard.name(of: .roomMessages(room))
            let join = await sniffed.messages(of: .join).filter { $0.topic == roomTopic }
            #expect(join.count == 1)
            #expect(join.allSatisfy { (1...20).contains($0.properties.messageExpiryInterval ?? 0) })
            #expect(await sniffed.messages(of: .heartbeat).allSatisfy { (1...20).contains($0.properties.messageExpiryInterval ?? 0) })
            #expect(await sniffed.messages(of: .direct).allSatisfy { (21...3600).contains($0.properties.messageExpiryInterval ?? 0) })
            #expect(await sniffed.messages(of: .text).allSatisfy { $0.properties.messageExpiryInterval == nil })
            #expect(await sniffed.messages(of: .status).allSatisfy { $0.properties.messageExpiryInterval == nil })
            // The retained membership does not expire either.
            let membership = await sniffed.messages(of: .join).filter { $0.topic != roomTopic }
            #expect(membership.count == 1 && membership.allSatisfy { $0.properties.messageExpiryInterval == nil })

            await alice.disconnect()
            await sniffer.disconnect()
            await sniffed.stop()
        }
    }

    @Test(
        "heartbeats and join/leave announcements expire: a session back after the expiry gets the text only",
        arguments: TestBrokerKind.allCases)
    func ephemeralMessagesExpire(kind: TestBrokerKind) async throws {
        // mosquitto queues QoS 0 messages (heartbeats) for offline sessions only when told to; ours never does.
        let options = BrokerOptions(mosquittoLines: ["queue_qos0_messages true"])
        try await withBroker(kind, options: options) { broker in
            let room = try RoomName("stale")
            let topic = ChatTopics.standard.name(of: .roomMessages(room))
            // Two persistent sessions subscribed to the room, then offline.
            for id in ["early", "late"] {
                let watcher = try rawV5Client(id, port: broker.port, sessionExpiry: 60)
                try await watcher.connect()
                try await watcher.subscribe(topic, qos: .exactlyOnce)
                await watcher.disconnect()
            }
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port, heartbeat: .milliseconds(100)) {
                $0.ephemeralMessageExpiry = 2
            }
            try await alice.connect()
            try await alice.join(room)
            try await alice.send(text: "kept", in: room)
            try await Task.sleep(for: .milliseconds(300))
            try await alice.leave(room)
            let left = ContinuousClock.now
            await alice.disconnect()

            // Back before the expiry: everything that was queued arrives (the control).
            let early = try rawV5Client("early", port: broker.port, sessionExpiry: 60)
            let earlyReceived = await ReceivedMessages(early)
            try await early.connect()
            #expect(await eventually { await earlyReceived.types().contains(.leave) })
            let earlyTypes = await earlyReceived.types()
            #expect(earlyTypes.contains(.join) && earlyTypes.contains(.text))
            if kind == .mosquitto { #expect(earlyTypes.contains(.heartbeat)) }

            // Back after it: only the text, which does not expire. (mosquitto counts expiry in whole seconds, so a
            // 2 s expiry may last almost 3 s.)
            try await Task.sleep(until: left + .milliseconds(3300))
            let late = try rawV5Client("late", port: broker.port, sessionExpiry: 60)
            let lateReceived = await ReceivedMessages(late)
            try await late.connect()
            #expect(await eventually { await lateReceived.types().contains(.text) })
            try await Task.sleep(for: .milliseconds(200))
            let lateTypes = await lateReceived.types()
            #expect(lateTypes == [.text], "\(lateTypes)")

            await early.disconnect()
            await late.disconnect()
        }
    }

    @Test(
        "the inbox session keeps direct messages for an offline user; each expires after its retention",
        arguments: TestBrokerKind.allCases)
    func inboxSessionKeepsDirectMessages(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let bobID = try UserID("bob")
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port) { $0.inboxSessionExpiry = 60 }
            try await bob.connect()
            await bob.disconnect()

            let alice = try makeChatClient("alice", name: "Alice", port: broker.port) { $0.directMessageRetention = 1 }
            let carol = try makeChatClient("carol", name: "Carol", port: broker.port)
            try await alice.connect()
            try await carol.connect()
            try await alice.sendDirect(text: "short-lived", to: bobID)
            try await carol.sendDirect(text: "kept for a week", to: bobID)
            try await Task.sleep(for: .milliseconds(2200))

            let bobAgain = try makeChatClient("bob", name: "Bob", port: broker.port) { $0.inboxSessionExpiry = 60 }
            let bobEvents = await EventCollector(bobAgain)
            try await bobAgain.connect()
            let kept = await bobEvents.first { $0.record?.content == .text("kept for a week") }
            #expect(kept?.record?.conversation == .direct(with: try UserID("carol")))
            try await alice.sendDirect(text: "marker", to: bobID)
            #expect(await bobEvents.first { $0.record?.content == .text("marker") } != nil)
            #expect(await bobEvents.count { $0.record?.content == .text("short-lived") } == 0)
            for client in [alice, carol, bobAgain] { await client.disconnect() }
        }
    }

    @Test("the inbox session itself expires: after it, direct messages sent meanwhile are gone", arguments: TestBrokerKind.allCases)
    func inboxSessionExpires(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let bobID = try UserID("bob")
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port) { $0.inboxSessionExpiry = 1 }
            try await bob.connect()
            await bob.disconnect()
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port)
            try await alice.connect()
            // mosquitto checks session expiry in whole seconds: a 1 s session is surely gone after 2.5 s.
            try await Task.sleep(for: .milliseconds(2500))
            try await alice.sendDirect(text: "too late", to: bobID)

            let bobAgain = try makeChatClient("bob", name: "Bob", port: broker.port) { $0.inboxSessionExpiry = 1 }
            let bobEvents = await EventCollector(bobAgain)
            try await bobAgain.connect()
            try await alice.sendDirect(text: "marker", to: bobID)
            #expect(await bobEvents.first { $0.record?.content == .text("marker") } != nil)
            #expect(await bobEvents.count { $0.record?.content == .text("too late") } == 0)
            for client in [alice, bobAgain] { await client.disconnect() }
        }
    }
}
