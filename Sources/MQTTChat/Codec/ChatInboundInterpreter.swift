import Foundation

/// Turns `(topic, payload)` pairs received from the broker into ``ChatInbound`` values. Pure: no I/O, no state.
///
/// It checks that the envelope agrees with its topic (a member topic carries that member's JoinEvent,
/// an inbox carries direct messages addressed to its owner, a room topic carries that room's traffic),
/// so a confused or malicious publisher cannot, say, make a gift appear in another room.
public struct ChatInboundInterpreter: Sendable {
    /// The topic layout.
    public let topics: ChatTopics
    /// This client's user id: messages from it are marked `.sent`.
    public let me: UserID

    /// Creates an interpreter for user `me`.
    public init(topics: ChatTopics = .standard, me: UserID) {
        self.topics = topics
        self.me = me
    }

    /// Interprets one received message. An empty payload on a retained topic means "cleared".
    public func interpret(topic: String, payload: [UInt8]) throws(ChatInboundError) -> ChatInbound {
        guard let parsed = topics.parse(topic) else { throw .unknownTopic(topic) }
        switch parsed {
        case .roomMember(let room, let user) where payload.isEmpty:
            return .presence(.membershipCleared(room: room, user: user))
        case .status(let user) where payload.isEmpty:
            return .presence(.statusCleared(user: user))
        case .presenceReplies where payload.isEmpty:
            throw .unexpectedBody(topic: topic)
        default:
            break
        }
        let envelope: ProtoEnvelope
        do { envelope = try ProtoEnvelope(serializedBytes: payload) } catch { throw .undecodablePayload(topic: topic) }
        return try interpret(envelope, parsed: parsed, topic: topic)
    }

    /// Interprets an envelope that was already decoded, as if it had arrived on `topic` (for example one of the
    /// envelopes of a room history response, checked against the room's message topic).
    public func interpret(topic: String, envelope: ProtoEnvelope) throws(ChatInboundError) -> ChatInbound {
        guard let parsed = topics.parse(topic) else { throw .unknownTopic(topic) }
        return try interpret(envelope, parsed: parsed, topic: topic)
    }

    private func interpret(_ envelope: ProtoEnvelope, parsed: ChatTopic, topic: String) throws(ChatInboundError)
        -> ChatInbound
    {
        let sender: UserID
        do { sender = try UserID(envelope.senderID) } catch { throw .invalidSender(envelope.senderID) }

        switch parsed {
        case .roomMember(let room, let user):
            guard case .join(let join)? = envelope.body else { throw .unexpectedBody(topic: topic) }
            guard sender == user, envelope.room == room.rawValue else { throw .topicMismatch(topic: topic) }
            return .presence(
                .membership(room: room, user: user, session: join.sessionID, profile: UserProfile(join.user)))

        case .status(let user):
            guard case .status(let status)? = envelope.body else { throw .unexpectedBody(topic: topic) }
            guard sender == user else { throw .topicMismatch(topic: topic) }
            return .presence(
                .status(
                    user: user, isOnline: status.state == .online, session: status.sessionID,
                    profile: UserProfile(status.user)))

        case .inbox(let owner):
            guard case .direct(let direct)? = envelope.body else { throw .unexpectedBody(topic: topic) }
            guard direct.recipient == owner.rawValue else { throw .topicMismatch(topic: topic) }
            let peer = sender == me ? owner : sender
            return .message(
                record(envelope, sender: sender, profile: direct.user, in: .direct(with: peer), content: .text(direct.text)))

        case .roomMessages(let room):
            return try roomMessage(envelope, sender: sender, room: room, topic: topic)

        case .presenceReplies:
            // Only heartbeats answering our "who is here?"; the room is the envelope's, as nothing else names it.
            guard case .heartbeat(let heartbeat)? = envelope.body else { throw .unexpectedBody(topic: topic) }
            guard let room = try? RoomName(envelope.room) else { throw .topicMismatch(topic: topic) }
            return Self.heartbeat(heartbeat, sender: sender, room: room)
        }
    }

    private static func heartbeat(_ heartbeat: ProtoHeartbeat, sender: UserID, room: RoomName) -> ChatInbound {
        .heartbeat(
            room: room, sender: ChatMember(id: sender, profile: UserProfile(heartbeat.user)),
            session: heartbeat.sessionID,
            interval: heartbeat.intervalMs == 0 ? nil : .milliseconds(Int64(heartbeat.intervalMs)),
            sequence: heartbeat.sequence)
    }

    private func roomMessage(_ envelope: ProtoEnvelope, sender: UserID, room: RoomName, topic: String)
        throws(ChatInboundError) -> ChatInbound
    {
        if case .direct? = envelope.body { throw .unexpectedBody(topic: topic) }
        if case .status? = envelope.body { throw .unexpectedBody(topic: topic) }
        guard envelope.room == room.rawValue else { throw .topicMismatch(topic: topic) }
        switch envelope.body {
        case .join(let join)?:
            return .joinAnnouncement(
                room: room, member: ChatMember(id: sender, profile: UserProfile(join.user)), session: join.sessionID,
                messageID: envelope.messageID)
        case .leave(let leave)?:
            return .leaveAnnouncement(
                room: room, member: ChatMember(id: sender, profile: UserProfile(leave.user)), messageID: envelope.messageID)
        case .text(let text)?:
            return .message(record(envelope, sender: sender, profile: text.user, in: .room(room), content: .text(text.text)))
        case .gift(let gift)?:
            let content = ChatMessageRecord.Content.gift(
                ChatGift(name: gift.giftName, count: gift.giftCount, url: gift.giftURL))
            return .message(record(envelope, sender: sender, profile: gift.user, in: .room(room), content: content))
        case .heartbeat(let heartbeat)?:
            return Self.heartbeat(heartbeat, sender: sender, room: room)
        case .direct?, .status?, nil:
            throw .unexpectedBody(topic: topic)
        }
    }

    private func record(
        _ envelope: ProtoEnvelope, sender: UserID, profile: ProtoUserInfo, in conversation: ChatMessageRecord.Conversation,
        content: ChatMessageRecord.Content
    ) -> ChatMessageRecord {
        ChatMessageRecord(
            id: envelope.messageID, sender: ChatMember(id: sender, profile: UserProfile(profile)),
            sentAt: Date(timeIntervalSince1970: Double(envelope.sentAtMs) / 1000), conversation: conversation,
            content: content, direction: sender == me ? .sent : .received)
    }
}
