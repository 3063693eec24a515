/// What a message received from the broker means to the chat layer (see ``ChatInboundInterpreter``).
public enum ChatInbound: Sendable, Hashable {
    /// A change to retained membership or status, for the presence tracker.
    case presence(PresenceInput)
    /// A member announced in a room that it joined (in connection session `session`); it also asks "who is here?".
    case joinAnnouncement(room: RoomName, member: ChatMember, session: String, messageID: String)
    /// A member announced in a room that it left.
    case leaveAnnouncement(room: RoomName, member: ChatMember, messageID: String)
    /// A text, gift or direct message.
    case message(ChatMessageRecord)
    /// A heartbeat of `sender` in `room` (never stored): in the room, or answering our "who is here?" on our
    /// presence reply topic. `interval` is when its next one is due (`nil`: not announced).
    case heartbeat(room: RoomName, sender: ChatMember, session: String, interval: Duration?, sequence: UInt64)
}

/// Why a received message was not understood.
public enum ChatInboundError: Error, Sendable, Hashable {
    /// The topic is not one of the chat layer's topics.
    case unknownTopic(String)
    /// The payload is not a valid protobuf `Envelope`.
    case undecodablePayload(topic: String)
    /// The envelope's sender id is not a valid user id.
    case invalidSender(String)
    /// The envelope's body does not belong on this topic (e.g. a gift on a status topic, or no body at all).
    case unexpectedBody(topic: String)
    /// The envelope names another room, user or recipient than the topic it arrived on.
    case topicMismatch(topic: String)
}
