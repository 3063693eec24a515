import Foundation
import MQTTChat

/// The readable content of one chat envelope, as `subscribe` prints it.
struct EnvelopeSummary: Sendable, Hashable, Encodable {
    /// A gift's name, count and picture.
    struct Gift: Sendable, Hashable, Encodable {
        let name: String
        let count: Int32
        let url: String
    }

    let messageID: String
    let senderID: String
    let senderName: String?
    let room: String
    let sentAtMs: Int64
    /// `join`, `leave`, `text`, `gift`, `direct`, `status` or `heartbeat`.
    let type: String
    let text: String?
    let gift: Gift?
    let recipient: String?
    /// `online` or `offline`, for status envelopes.
    let state: String?
    let sequence: UInt64?

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id", senderID = "sender_id", senderName = "sender_name", room
        case sentAtMs = "sent_at_ms", sentAt = "sent_at", type, text, gift, recipient, state, sequence
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messageID, forKey: .messageID)
        try container.encode(senderID, forKey: .senderID)
        try container.encodeIfPresent(senderName, forKey: .senderName)
        try container.encode(room, forKey: .room)
        try container.encode(sentAtMs, forKey: .sentAtMs)
        try container.encode(ClockFormat.iso8601(milliseconds: sentAtMs), forKey: .sentAt)
        try container.encode(type, forKey: .type)
        try container.encodeIfPresent(text, forKey: .text)
        try container.encodeIfPresent(gift, forKey: .gift)
        try container.encodeIfPresent(recipient, forKey: .recipient)
        try container.encodeIfPresent(state, forKey: .state)
        try container.encodeIfPresent(sequence, forKey: .sequence)
    }

    /// Summarises `envelope`; `nil` if it has no body (then it is not treated as a chat envelope).
    init?(_ envelope: ProtoEnvelope) {
        var text: String?
        var gift: Gift?
        var recipient: String?
        var state: String?
        var sequence: UInt64?
        var user: ProtoUserInfo?
        switch envelope.body {
        case .join(let join)?:
            type = "join"
            user = join.user
        case .leave(let leave)?:
            type = "leave"
            user = leave.user
        case .text(let message)?:
            type = "text"
            user = message.user
            text = message.text
        case .gift(let message)?:
            type = "gift"
            user = message.user
            gift = Gift(name: message.giftName, count: message.giftCount, url: message.giftURL)
        case .direct(let message)?:
            type = "direct"
            user = message.user
            text = message.text
            recipient = message.recipient
        case .status(let status)?:
            type = "status"
            user = status.user
            state = status.state == .online ? "online" : "offline"
        case .heartbeat(let heartbeat)?:
            type = "heartbeat"
            sequence = heartbeat.sequence
        case nil:
            return nil
        }
        messageID = envelope.messageID
        senderID = envelope.senderID
        senderName = user.flatMap { $0.name.isEmpty || $0.name == envelope.senderID ? nil : $0.name }
        room = envelope.room
        sentAtMs = envelope.sentAtMs
        self.text = text
        self.gift = gift
        self.recipient = recipient
        self.state = state
        self.sequence = sequence
    }

    /// One line: `HH:mm:ss #room type sender: content`.
    var line: String {
        let time = ClockFormat.time(Date(timeIntervalSince1970: Double(sentAtMs) / 1000))
        let place = room.isEmpty ? (recipient.map { "@\($0)" } ?? "-") : "#\(room)"
        let sender = senderName.map { "\(senderID) (\($0))" } ?? senderID
        let content: String? =
            if let gift { "\(gift.name) x\(gift.count)" } else if let text { text } else if let state { state } else {
                sequence.map { "#\($0)" }
            }
        return "\(time) \(place) \(type) \(sender)" + (content.map { ": \($0)" } ?? "")
    }
}

/// Recognising chat envelopes among received MQTT messages.
enum ChatPayload {
    /// The envelope in `payload` if `topic` is one of the chat layer's topics and the payload decodes as an
    /// envelope with a body; `nil` for anything else (raw MQTT traffic).
    static func envelope(topic: String, payload: [UInt8]) -> ProtoEnvelope? {
        guard !payload.isEmpty, ChatTopics.standard.parse(topic) != nil,
            let envelope = try? ProtoEnvelope(serializedBytes: payload), envelope.body != nil
        else { return nil }
        return envelope
    }

    /// The payload as text if it is valid UTF-8, else as lowercase hex.
    static func rawText(_ payload: [UInt8]) -> (text: String, isHex: Bool) {
        if let text = String(validating: payload, as: UTF8.self) { return (text, false) }
        return (payload.map { String(format: "%02x", $0) }.joined(), true)
    }
}
