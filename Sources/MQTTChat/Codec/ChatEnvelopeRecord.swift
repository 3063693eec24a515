import Foundation

extension ChatMessageRecord {
    /// The record of an envelope this client just sent (text, gift or direct), for local history.
    init?(sent envelope: ProtoEnvelope, by sender: ChatMember) {
        let conversation: Conversation
        let content: Content
        switch envelope.body {
        case .text(let text)?:
            guard let room = try? RoomName(envelope.room) else { return nil }
            conversation = .room(room)
            content = .text(text.text)
        case .gift(let gift)?:
            guard let room = try? RoomName(envelope.room) else { return nil }
            conversation = .room(room)
            content = .gift(ChatGift(name: gift.giftName, count: gift.giftCount, url: gift.giftURL))
        case .direct(let direct)?:
            guard let peer = try? UserID(direct.recipient) else { return nil }
            conversation = .direct(with: peer)
            content = .text(direct.text)
        case .join?, .leave?, .status?, .heartbeat?, nil:
            return nil
        }
        self.init(
            id: envelope.messageID, sender: sender, sentAt: Date(timeIntervalSince1970: Double(envelope.sentAtMs) / 1000),
            conversation: conversation, content: content, direction: .sent)
    }
}
