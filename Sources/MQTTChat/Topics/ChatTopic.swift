/// A topic of the chat layer, parsed. See TOPICS.md for the layout and the reasons behind it.
public enum ChatTopic: Sendable, Hashable {
    /// `<root>/rooms/<room>/messages`: join/leave announcements, text, gifts and heartbeats of a room.
    case roomMessages(RoomName)
    /// `<root>/rooms/<room>/members/<user>`: retained JoinEvent while `user` is a member of `room`.
    case roomMember(RoomName, UserID)
    /// `<root>/users/<user>/inbox`: direct messages to `user`.
    case inbox(UserID)
    /// `<root>/users/<user>/status`: retained online/offline status of `user` (offline is its MQTT will).
    case status(UserID)
    /// `<root>/users/<user>/inbox/presence`: heartbeats answering `user`'s "who is here?" (the Response Topic of its MQTT 5
    /// JOIN announcements), so a newcomer hears the room without the room hearing every answer.
    case presenceReplies(UserID)
}
