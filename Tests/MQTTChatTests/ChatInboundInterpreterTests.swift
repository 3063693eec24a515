import Foundation
import Testing

@testable import MQTTChat

@Suite("Interpreting received messages")
struct ChatInboundInterpreterTests {
    let topics = ChatTopics.standard
    let room: RoomName
    let alice: UserID
    let bob: UserID
    let bobFactory: ChatEnvelopeFactory
    let interpreter: ChatInboundInterpreter

    init() throws {
        room = try RoomName("lobby")
        alice = try UserID("alice")
        bob = try UserID("bob")
        bobFactory = ChatEnvelopeFactory(sender: bob, profile: UserProfile(name: "Bob", level: 1), session: "b1")
        interpreter = ChatInboundInterpreter(me: alice)
    }

    private func bytes(_ envelope: ProtoEnvelope) throws -> [UInt8] { try envelope.serializedBytes() }

    @Test("a retained JoinEvent and a retained status become presence inputs; empty payloads clear them")
    func presence() throws {
        let member = topics.name(of: .roomMember(room, bob))
        #expect(
            try interpreter.interpret(topic: member, payload: bytes(bobFactory.join(room)))
                == .presence(.membership(room: room, user: bob, session: "b1", profile: UserProfile(name: "Bob", level: 1))))
        #expect(try interpreter.interpret(topic: member, payload: []) == .presence(.membershipCleared(room: room, user: bob)))
        let status = topics.name(of: .status(bob))
        #expect(
            try interpreter.interpret(topic: status, payload: bytes(bobFactory.status(isOnline: false)))
                == .presence(.status(user: bob, isOnline: false, session: "b1", profile: UserProfile(name: "Bob", level: 1))))
        #expect(try interpreter.interpret(topic: status, payload: []) == .presence(.statusCleared(user: bob)))
    }

    @Test("room text and gifts become received records")
    func roomMessages() throws {
        let topic = topics.name(of: .roomMessages(room))
        guard case .message(let text) = try interpreter.interpret(topic: topic, payload: bytes(bobFactory.text("hi", in: room)))
        else { Issue.record("not a message"); return }
        #expect(text.content == .text("hi"))
        #expect(text.conversation == .room(room))
        #expect(text.direction == .received)
        #expect(text.sender.id == bob)
        let gift = bobFactory.gift(ChatGift(name: "rose", count: 2), in: room)
        guard case .message(let record) = try interpreter.interpret(topic: topic, payload: bytes(gift)) else {
            Issue.record("not a message"); return
        }
        #expect(record.content == .gift(ChatGift(name: "rose", count: 2)))
        #expect(record.id == gift.messageID)
        let bobMember = ChatMember(id: bob, profile: UserProfile(name: "Bob", level: 1))
        #expect(
            try interpreter.interpret(topic: topic, payload: bytes(bobFactory.heartbeat(sequence: 4, in: room)))
                == .heartbeat(room: room, sender: bobMember, session: "b1", interval: nil, sequence: 4))
        let join = bobFactory.join(room)
        #expect(
            try interpreter.interpret(topic: topic, payload: bytes(join))
                == .joinAnnouncement(room: room, member: bobMember, session: "b1", messageID: join.messageID))
    }

    @Test("a heartbeat on my presence reply topic answers my who-is-here for the room it names")
    func presenceReplies() throws {
        let replies = topics.name(of: .presenceReplies(alice))
        #expect(replies == "mqttchat/users/alice/inbox/presence")
        #expect(topics.parse(replies) == .presenceReplies(alice))
        let heartbeat = bobFactory.heartbeat(sequence: 1, interval: .milliseconds(3500), in: room)
        #expect(
            try interpreter.interpret(topic: replies, payload: bytes(heartbeat))
                == .heartbeat(
                    room: room, sender: ChatMember(id: bob, profile: UserProfile(name: "Bob", level: 1)), session: "b1",
                    interval: .milliseconds(3500), sequence: 1))
        #expect(throws: ChatInboundError.unexpectedBody(topic: replies)) {
            try interpreter.interpret(topic: replies, payload: bytes(bobFactory.text("hi", in: room)))
        }
        var noRoom = heartbeat
        noRoom.room = "a/b"
        #expect(throws: ChatInboundError.topicMismatch(topic: replies)) {
            try interpreter.interpret(topic: replies, payload: bytes(noRoom))
        }
    }

    @Test("a direct message in my inbox is a conversation with its sender")
    func direct() throws {
        let inbox = topics.name(of: .inbox(alice))
        guard case .message(let record) = try interpreter.interpret(
            topic: inbox, payload: bytes(bobFactory.direct("psst", to: alice)))
        else { Issue.record("not a message"); return }
        #expect(record.conversation == .direct(with: bob))
        #expect(record.content == .text("psst"))
    }

    @Test("envelopes that disagree with their topic or cannot be decoded are rejected")
    func rejections() throws {
        let otherRoom = try RoomName("kitchen")
        let lobbyTopic = topics.name(of: .roomMessages(room))
        #expect(throws: ChatInboundError.topicMismatch(topic: lobbyTopic)) {
            try interpreter.interpret(topic: lobbyTopic, payload: bytes(bobFactory.text("x", in: otherRoom)))
        }
        let spoofed = topics.name(of: .roomMember(room, alice))
        #expect(throws: ChatInboundError.topicMismatch(topic: spoofed)) {
            try interpreter.interpret(topic: spoofed, payload: bytes(bobFactory.join(room)))
        }
        let inbox = topics.name(of: .inbox(alice))
        #expect(throws: ChatInboundError.topicMismatch(topic: inbox)) {
            try interpreter.interpret(topic: inbox, payload: bytes(bobFactory.direct("x", to: try UserID("carol"))))
        }
        #expect(throws: ChatInboundError.unexpectedBody(topic: lobbyTopic)) {
            try interpreter.interpret(topic: lobbyTopic, payload: bytes(bobFactory.status(isOnline: true)))
        }
        #expect(throws: ChatInboundError.undecodablePayload(topic: lobbyTopic)) {
            try interpreter.interpret(topic: lobbyTopic, payload: [0xFF, 0xFF, 0xFF])
        }
        #expect(throws: ChatInboundError.unknownTopic("elsewhere")) {
            try interpreter.interpret(topic: "elsewhere", payload: [])
        }
    }
}
