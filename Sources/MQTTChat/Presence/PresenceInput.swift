/// Something the presence tracker learns from the broker.
public enum PresenceInput: Sendable, Hashable {
    /// A retained JoinEvent on `<root>/rooms/<room>/members/<user>`, or a JoinEvent announced in the room.
    case membership(room: RoomName, user: UserID, session: String, profile: UserProfile)
    /// An empty retained payload on the member topic, or a LeaveEvent announced in the room.
    case membershipCleared(room: RoomName, user: UserID)
    /// A retained status on `<root>/users/<user>/status` (the offline one usually comes from the will).
    case status(user: UserID, isOnline: Bool, session: String, profile: UserProfile)
    /// An empty retained payload on the status topic: nothing is known about the user.
    case statusCleared(user: UserID)
}
