/// A gift: the design notes' `GiftMessage` without the sender.
public struct ChatGift: Sendable, Hashable {
    /// The gift's name, e.g. "rocket".
    public var name: String
    /// How many were sent at once.
    public var count: Int32
    /// Where the gift's image or animation is; may be empty.
    public var url: String

    /// Creates a gift.
    public init(name: String, count: Int32 = 1, url: String = "") {
        self.name = name
        self.count = count
        self.url = url
    }
}
