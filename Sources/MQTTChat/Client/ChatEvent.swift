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
    /// Messages of a joined room that this client had missed, from a room history service (MQTT 5), now merged
    /// into local history: only those it did not have (deduplicated by message id), oldest first.
    case historyMerged(room: RoomName, records: [ChatMessageRecord])
    /// The MQTT connection changed state.
    case connection(MQTTConnectionState)
}
