import Testing

@testable import MQTTChat

@Suite("Chat topic layout")
struct ChatTopicsTests {
    let topics = ChatTopics.standard

    @Test("topics are built with the documented layout")
    func build() throws {
        let room = try RoomName("lobby")
        let alice = try UserID("alice")
        #expect(topics.name(of: .roomMessages(room)) == "mqttchat/rooms/lobby/messages")
        #expect(topics.name(of: .roomMember(room, alice)) == "mqttchat/rooms/lobby/members/alice")
        #expect(topics.name(of: .inbox(alice)) == "mqttchat/users/alice/inbox")
        #expect(topics.name(of: .status(alice)) == "mqttchat/users/alice/status")
        #expect(topics.membersFilter(of: room) == "mqttchat/rooms/lobby/members/+")
        #expect(topics.allStatusesFilter == "mqttchat/users/+/status")
    }

    @Test("every built topic parses back to the same value")
    func roundTrip() throws {
        let room = try RoomName("直播间 1")
        let user = try UserID("user-42")
        for topic in [ChatTopic.roomMessages(room), .roomMember(room, user), .inbox(user), .status(user), .presenceReplies(user)] {
            #expect(topics.parse(topics.name(of: topic)) == topic)
        }
    }

    @Test(
        "foreign or malformed topics do not parse",
        arguments: [
            "other/rooms/lobby/messages", "mqttchat/rooms/lobby", "mqttchat/rooms/lobby/messages/extra",
            "mqttchat/rooms//messages", "mqttchat/rooms/lobby/other", "mqttchat/rooms/lobby/members/",
            "mqttchat/users/alice/outbox", "mqttchat/users/alice", "mqttchat", "", "mqttchat/rooms/lobby/members/a/b",
            "mqttchat/users/alice/inbox/reply", "mqttchat/users/alice/presence",
        ])
    func rejects(topic: String) {
        #expect(topics.parse(topic) == nil)
    }

    @Test("a custom root namespaces everything and is validated")
    func customRoot() throws {
        let custom = try ChatTopics(root: "tenant1")
        #expect(custom.name(of: .inbox(try UserID("bob"))) == "tenant1/users/bob/inbox")
        #expect(custom.parse("mqttchat/users/bob/inbox") == nil)
        #expect(throws: ChatNameError.containsMultiLevelWildcard) { try ChatTopics(root: "#") }
    }
}
