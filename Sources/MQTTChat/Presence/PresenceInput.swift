/// Something the presence tracker learns from the broker.
public enum PresenceInput: Sendable, Hashable {
    /// A retained JoinEvent on `<root>/rooms/<room>/members/<user>`: a cached membership, which counts only while
    /// the user's status is online in the same session and only until the liveness timeout, unless it is heard live.
    case membership(room: RoomName, user: UserID, session: String, profile: UserProfile)
    /// An empty retained payload on the member topic, or a LeaveEvent announced in the room.
    case membershipCleared(room: RoomName, user: UserID)
    /// A status on `<root>/users/<user>/status` (the offline one usually comes from the will).
    case status(user: UserID, isOnline: Bool, session: String, profile: UserProfile)
    /// An empty retained payload on the status topic: nothing is known about the user.
    case statusCleared(user: UserID)
    /// The member was heard live in the room: its JOIN announcement or a heartbeat (periodic, or answering a
    /// newcomer's "who is here"). `interval` is the heartbeat interval it announced; `nil` means "unknown", and the
    /// tracker's default applies.
    case heard(room: RoomName, user: UserID, session: String, profile: UserProfile, interval: Duration?)
}
