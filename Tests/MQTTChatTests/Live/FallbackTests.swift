import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient
import MQTTCore
import Testing

/// A broker that refuses MQTT 5: the chat client connects again at 3.1.1, once, and remembers it.
@Suite("Chat falls back to MQTT 3.1.1", .timeLimit(.minutes(1)))
struct FallbackTests {
    @Test(
        "refused at level 5, the client reconnects at 3.1.1, chats, and goes straight to 3.1.1 next time",
        arguments: TestBrokerKind.allCases, VersionRefusingProxy.Refusal.allCases)
    func fallBackOnce(kind: TestBrokerKind, refusal: VersionRefusingProxy.Refusal) async throws {
        try await withBroker(kind) { broker in
            let proxy = try VersionRefusingProxy(upstreamPort: broker.port, refusal: refusal)
            defer { proxy.stop() }
            let room = try RoomName("legacy")
            let alice = try makeChatClient("alice", name: "Alice", port: proxy.port)
            let bob = try makeChatClient("bob", name: "Bob", port: broker.port)
            let aliceEvents = await EventCollector(alice)
            let bobEvents = await EventCollector(bob)
            #expect(await alice.protocolVersion == .v5)

            try await alice.connect()
            #expect(proxy.connectLevels == [5, 4])
            #expect(await alice.protocolVersion == .v3_1_1)
            #expect(await alice.fellBackToMQTT311)

            // It chats at 3.1.1 with a member that speaks MQTT 5.
            try await bob.connect()
            #expect(await bob.protocolVersion == .v5)
            try await alice.join(room)
            try await bob.join(room)
            try await alice.send(text: "from 3.1.1", in: room)
            #expect(await bobEvents.first { $0.record?.content == .text("from 3.1.1") } != nil)
            try await bob.send(text: "from 5", in: room)
            #expect(await aliceEvents.first { $0.record?.content == .text("from 5") } != nil)
            // At 3.1.1 there is no No Local: its own messages come back (and are dropped).
            #expect(await eventually { await alice.ownMessagesReceivedBack >= 2 })

            await alice.disconnect()
            try await alice.connect()
            #expect(proxy.connectLevels == [5, 4, 4])
            await alice.disconnect()
            await bob.disconnect()
        }
    }
}
