/// Builds and parses the chat layer's MQTT topics (see TOPICS.md).
///
/// Every name that goes into a topic is a validated ``RoomName`` or ``UserID``, so a built topic
/// always has exactly the levels below and never contains a wildcard.
public struct ChatTopics: Sendable, Hashable {
    /// The default first topic level.
    public static let defaultRoot = "mqttchat"

    /// The first topic level, which namespaces all chat traffic on a shared broker.
    public let root: String

    /// Uses `root` as the first topic level; it must itself be a valid name.
    public init(root: String = ChatTopics.defaultRoot) throws(ChatNameError) {
        try ChatNameValidator().validate(root)
        self.root = root
    }

    private init(validatedRoot: String) { root = validatedRoot }

    /// The topics under the default root `mqttchat`.
    public static let standard = ChatTopics(validatedRoot: defaultRoot)

    /// The topic name for `topic`.
    public func name(of topic: ChatTopic) -> String {
        switch topic {
        case .roomMessages(let room): "\(root)/rooms/\(room.rawValue)/messages"
        case .roomMember(let room, let user): "\(root)/rooms/\(room.rawValue)/members/\(user.rawValue)"
        case .inbox(let user): "\(root)/users/\(user.rawValue)/inbox"
        case .status(let user): "\(root)/users/\(user.rawValue)/status"
        case .presenceReplies(let user): "\(root)/users/\(user.rawValue)/inbox/presence"
        }
    }

    /// `<root>/rooms/<room>/members/+`: every member topic of `room`.
    public func membersFilter(of room: RoomName) -> String {
        "\(root)/rooms/\(room.rawValue)/members/+"
    }

    /// `<root>/rooms/<room>/history`: MQTT 5 requests to a room history service ("messages since X"), answered on
    /// the requester's response topic. Not a chat topic: ``parse(_:)`` returns `nil` for it.
    public func historyRequests(of room: RoomName) -> String {
        "\(root)/rooms/\(room.rawValue)/history"
    }

    /// `<root>/users/+/status`: every user's status.
    public var allStatusesFilter: String { "\(root)/users/+/status" }

    /// Parses a topic name received from the broker; `nil` if it is not one of the chat layer's topics.
    public func parse(_ topicName: String) -> ChatTopic? {
        let levels = topicName.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard levels.first == root else { return nil }
        switch (levels.count, levels.dropFirst().first) {
        case (4, "rooms"):
            guard levels[3] == "messages", let room = try? RoomName(levels[2]) else { return nil }
            return .roomMessages(room)
        case (5, "users"):
            // Under the inbox, so a broker ACL that lets only <user> read its inbox (`inbox/#`) covers it too.
            guard levels[3] == "inbox", levels[4] == "presence", let user = try? UserID(levels[2]) else { return nil }
            return .presenceReplies(user)
        case (5, "rooms"):
            guard levels[3] == "members", let room = try? RoomName(levels[2]),
                let user = try? UserID(levels[4])
            else { return nil }
            return .roomMember(room, user)
        case (4, "users"):
            guard let user = try? UserID(levels[2]) else { return nil }
            switch levels[3] {
            case "inbox": return .inbox(user)
            case "status": return .status(user)
            default: return nil
            }
        default:
            return nil
        }
    }
}
