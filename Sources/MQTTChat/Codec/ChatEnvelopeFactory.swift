public import Foundation

/// Builds the envelopes one user publishes: fills in a fresh message id, the sender, the time and the type.
public struct ChatEnvelopeFactory: Sendable {
    /// The sending user.
    public let sender: UserID
    /// The sender's profile, copied into every body that has a `user` field.
    public let profile: UserProfile
    /// The sender's connection session (see `UserStatus.session_id`).
    public let session: String
    private let now: @Sendable () -> Date
    private let makeID: @Sendable () -> String

    /// Creates a factory; `now` and `makeID` are injectable so tests get fixed times and ids.
    public init(
        sender: UserID, profile: UserProfile, session: String,
        now: @escaping @Sendable () -> Date = { Date() },
        makeID: @escaping @Sendable () -> String = { UUID().uuidString }
    ) {
        self.sender = sender
        self.profile = profile
        self.session = session
        self.now = now
        self.makeID = makeID
    }

    /// A JOIN envelope for `room` (also the retained payload of the member topic).
    public func join(_ room: RoomName) -> ProtoEnvelope {
        var event = ProtoJoinEvent()
        event.user = profile.proto
        event.sessionID = session
        return envelope(.join, room: room, body: .join(event))
    }

    /// A LEAVE envelope for `room`.
    public func leave(_ room: RoomName) -> ProtoEnvelope {
        var event = ProtoLeaveEvent()
        event.user = profile.proto
        return envelope(.leave, room: room, body: .leave(event))
    }

    /// A TEXT envelope for `room`.
    public func text(_ text: String, in room: RoomName) -> ProtoEnvelope {
        var message = ProtoChatMessage()
        message.user = profile.proto
        message.text = text
        return envelope(.text, room: room, body: .text(message))
    }

    /// A GIFT envelope for `room`.
    public func gift(_ gift: ChatGift, in room: RoomName) -> ProtoEnvelope {
        var message = ProtoGiftMessage()
        message.user = profile.proto
        message.giftName = gift.name
        message.giftURL = gift.url
        message.giftCount = gift.count
        return envelope(.gift, room: room, body: .gift(message))
    }

    /// A DIRECT envelope for `recipient`'s inbox.
    public func direct(_ text: String, to recipient: UserID) -> ProtoEnvelope {
        var message = ProtoDirectMessage()
        message.user = profile.proto
        message.text = text
        message.recipient = recipient.rawValue
        return envelope(.direct, room: nil, body: .direct(message))
    }

    /// A STATUS envelope (online when connecting; offline for the will and a graceful disconnect).
    public func status(isOnline: Bool) -> ProtoEnvelope {
        var status = ProtoUserStatus()
        status.state = isOnline ? .online : .offline
        status.user = profile.proto
        status.sessionID = session
        return envelope(.status, room: nil, body: .status(status))
    }

    /// A HEARTBEAT envelope for `room`: "I am here" with this connection's session and profile, announcing when the
    /// next one comes (`interval`, `nil` for unknown; see ``HeartbeatSchedule``).
    public func heartbeat(sequence: UInt64, interval: Duration? = nil, in room: RoomName) -> ProtoEnvelope {
        var heartbeat = ProtoHeartbeat()
        heartbeat.sequence = sequence
        heartbeat.sessionID = session
        heartbeat.user = profile.proto
        heartbeat.intervalMs = interval.map(Self.milliseconds) ?? 0
        return envelope(.heartbeat, room: room, body: .heartbeat(heartbeat))
    }

    /// `duration` in whole milliseconds, clamped to what the wire field holds.
    static func milliseconds(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(0, ms))
    }

    private func envelope(_ type: ProtoMessageType, room: RoomName?, body: ProtoEnvelope.OneOf_Body) -> ProtoEnvelope {
        var envelope = ProtoEnvelope()
        envelope.messageID = makeID()
        envelope.senderID = sender.rawValue
        envelope.room = room?.rawValue ?? ""
        envelope.sentAtMs = Int64((now().timeIntervalSince1970 * 1000).rounded())
        envelope.type = type
        envelope.body = body
        return envelope
    }
}
