public import MQTTClient

/// What a ``ChatClient`` reports to the application.
public enum ChatEvent: Sendable, Hashable {
    /// A member announced that it joined a room.
    case joined(room: RoomName, member: ChatMember)
    /// A member announced that it left a room.
    case left(room: RoomName, member: ChatMember)
    /// Another member's text in a joined room (own messages are stored but not reported again).
    case text(ChatMessageRecord)
    /// Another member's gift in a joined room.
    case gift(ChatMessageRecord)
    /// A direct message to this user.
    case directMessage(ChatMessageRecord)
    /// Someone became present in or absent from a joined room (including going offline without a goodbye).
    case presenceChanged(PresenceChange)
    /// The MQTT connection changed state.
    case connection(MQTTConnectionState)
}
