import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient
import MQTTCore
import Testing

/// Late joiners and the room history service (MQTT 5 request/response), against mosquitto and ours.
@Suite("Room history for late joiners", .timeLimit(.minutes(1)))
struct RoomHistoryServiceTests {
    /// Users with passwords and the shipped broker-config/chat.acl, so the replies under `<inbox>/reply` must be
    /// readable by their owner and writable by the service.
    static func chatACLOptions() throws -> BrokerOptions {
        let acl = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("broker-config/chat.acl")
        let users = ["alice", "carol", "history"].reduce(into: [String: String]()) { $0[$1] = "pw-\($1)" }
        return BrokerOptions(
            users: users, mosquittoLines: ["acl_file \(acl.path)"], mqttchatLines: ["acl_file \(acl.path)"])
    }

    @Test(
        "a late joiner gets the room's last N messages from the service, merged into history without duplicates",
        arguments: TestBrokerKind.allCases)
    func lateJoinerGetsLastMessages(kind: TestBrokerKind) async throws {
        try await withBroker(kind, options: try Self.chatACLOptions()) { broker in
            let room = try RoomName("lobby")
            var serviceConfiguration = RoomHistoryServiceConfiguration(
                clientID: "history", rooms: [room], capacity: 3, port: broker.port)
            serviceConfiguration.mqtt.username = "history"
            serviceConfiguration.mqtt.password = "pw-history"
            let service = try RoomHistoryService(configuration: serviceConfiguration)
            try await service.start()

            let login: (String) -> (inout ChatClientConfiguration) -> Void = { user in
                { configuration in
                    configuration.mqtt.username = user
                    configuration.mqtt.password = "pw-\(user)"
                }
            }
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port, configure: login("alice"))
            try await alice.connect()
            try await alice.join(room)
            for index in 1...5 { try await alice.send(text: "m\(index)", in: room) }
            #expect(await eventually { await service.keptMessageCount(in: room) == 3 })

            let carol = try makeChatClient("carol", name: "Carol", port: broker.port, configure: login("carol"))
            let carolEvents = await EventCollector(carol)
            try await carol.connect()
            try await carol.join(room)
            let merged = await carolEvents.first { if case .historyMerged = $0 { true } else { false } }
            guard case .historyMerged(let mergedRoom, let records)? = merged else {
                Issue.record("no history merged")
                return
            }
            #expect(mergedRoom == room)
            #expect(records.map(\.content) == [.text("m3"), .text("m4"), .text("m5")])
            #expect(records.allSatisfy { $0.sender.id == alice.me.id && $0.direction == .received })
            #expect(try await carol.history(room: room).map(\.content) == [.text("m3"), .text("m4"), .text("m5")])

            // Back later: only what is newer than its newest message is new; m5 comes again and is not stored twice.
            try await carol.leave(room)
            try await alice.send(text: "m6", in: room)
            #expect(await eventually { await service.keptMessageCount(in: room) == 3 })
            try await Task.sleep(for: .milliseconds(100))
            try await carol.join(room)
            let isMerge: @Sendable (ChatEvent) -> Bool = { if case .historyMerged = $0 { true } else { false } }
            #expect(await eventually { await carolEvents.count(where: isMerge) == 2 })
            let last = await carolEvents.events.last(where: isMerge)
            guard case .historyMerged(_, let again)? = last else {
                Issue.record("no second history merge")
                return
            }
            #expect(again.map(\.content) == [.text("m6")])
            let history = try await carol.history(room: room).map(\.content)
            #expect(history == [.text("m3"), .text("m4"), .text("m5"), .text("m6")])
            #expect(await service.answeredRequestCount >= 2)

            await carol.disconnect()
            await alice.disconnect()
            await service.stop()
        }
    }

    @Test("without a service a join works as before: nothing merged, no error, a bounded wait", arguments: TestBrokerKind.allCases)
    func noService(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let room = try RoomName("quiet")
            let alice = try makeChatClient("alice", name: "Alice", port: broker.port) {
                $0.roomHistoryTimeout = .milliseconds(300)
            }
            let events = await EventCollector(alice)
            try await alice.connect()
            let started = ContinuousClock.now
            try await alice.join(room)
            #expect(ContinuousClock.now - started < .seconds(2))
            await #expect(throws: ChatError.self) { try await alice.fetchRoomHistory(room, timeout: .milliseconds(200)) }
            try await Task.sleep(for: .milliseconds(500))
            #expect(await events.count { if case .historyMerged = $0 { true } else { false } } == 0)
            try await alice.send(text: "still works", in: room)
            #expect(try await alice.history(room: room).count == 1)
            #expect(await alice.droppedMessageCount == 0)
            await alice.disconnect()
        }
    }
}
