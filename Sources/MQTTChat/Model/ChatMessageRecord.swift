public import Foundation

/// A text, gift or direct message as delivered to the application and stored in local history.
public struct ChatMessageRecord: Sendable, Hashable {
    /// Where a message belongs.
    public enum Conversation: Sendable, Hashable {
        /// A room's public traffic.
        case room(RoomName)
        /// A private conversation with another user (the recipient of a sent message, the sender of a received one).
        case direct(with: UserID)
    }

    /// What a message says.
    public enum Content: Sendable, Hashable {
        /// A line of text.
        case text(String)
        /// A gift.
        case gift(ChatGift)
    }

    /// Whether this client sent or received the message.
    public enum Direction: String, Sendable, Hashable {
        /// Sent by this client.
        case sent
        /// Received from another client.
        case received
    }

    /// The envelope's unique message id.
    public let id: String
    /// Who sent it.
    public let sender: ChatMember
    /// When the sender created it (the sender's clock, millisecond precision).
    public let sentAt: Date
    /// The room or direct conversation.
    public let conversation: Conversation
    /// The text or gift.
    public let content: Content
    /// Sent or received by this client.
    public let direction: Direction

    /// Creates a record.
    public init(
        id: String, sender: ChatMember, sentAt: Date, conversation: Conversation, content: Content,
        direction: Direction
    ) {
        self.id = id
        self.sender = sender
        self.sentAt = sentAt
        self.conversation = conversation
        self.content = content
        self.direction = direction
    }
}
