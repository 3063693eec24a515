/// A user as seen by other users: its id and profile.
public struct ChatMember: Sendable, Hashable {
    /// The user's id (its MQTT client id).
    public let id: UserID
    /// The user's profile as it announced it.
    public let profile: UserProfile

    /// Creates a member.
    public init(id: UserID, profile: UserProfile) {
        self.id = id
        self.profile = profile
    }
}
