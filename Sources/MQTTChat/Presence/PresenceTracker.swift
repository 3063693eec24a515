/// Computes who is present in which room from retained membership and status messages.
///
/// A user is present in a room when both hold:
/// - its retained membership (`rooms/<room>/members/<user>`) exists, and
/// - its retained status (`users/<user>/status`) is online *with the same session id* as the membership.
///
/// A user's MQTT will can only publish one message, so an ungraceful disconnect flips the single status
/// topic to offline and the user disappears from every room at once. The session id makes stale
/// memberships (left behind by a killed process) count for nothing when the same user id comes back.
/// Inputs may arrive in any order; the tracker is a pure value type and never does I/O.
public struct PresenceTracker: Sendable {
    private struct Membership: Sendable, Hashable {
        var session: String
        var profile: UserProfile
    }

    private struct Status: Sendable, Hashable {
        var isOnline: Bool
        var session: String
        var profile: UserProfile
    }

    private var memberships: [RoomName: [UserID: Membership]] = [:]
    private var statuses: [UserID: Status] = [:]

    /// An empty tracker.
    public init() {}

    /// The members present in `room`, sorted by id.
    public func members(of room: RoomName) -> [ChatMember] {
        (memberships[room] ?? [:]).keys.sorted().compactMap { presentMember(room: room, user: $0) }
    }

    /// Whether `user` is present in `room`.
    public func isPresent(_ user: UserID, in room: RoomName) -> Bool {
        presentMember(room: room, user: user) != nil
    }

    /// Whether `user`'s retained status says online; `nil` when no status is known for it.
    public func isOnline(_ user: UserID) -> Bool? { statuses[user]?.isOnline }

    /// Rooms in which the tracker knows any membership.
    public var knownRooms: [RoomName] { memberships.keys.sorted() }

    /// Applies `input` and returns the resulting changes of presence (empty if nobody appeared or disappeared).
    public mutating func apply(_ input: PresenceInput) -> [PresenceChange] {
        switch input {
        case .membership(let room, let user, let session, let profile):
            let before = presentMember(room: room, user: user)
            memberships[room, default: [:]][user] = Membership(session: session, profile: profile)
            return change(room: room, user: user, before: before, reason: .wentOffline).map { [$0] } ?? []

        case .membershipCleared(let room, let user):
            let before = presentMember(room: room, user: user)
            memberships[room]?[user] = nil
            if memberships[room]?.isEmpty == true { memberships[room] = nil }
            return change(room: room, user: user, before: before, reason: .leftRoom).map { [$0] } ?? []

        case .status(let user, let isOnline, let session, let profile):
            return updateStatus(of: user, to: Status(isOnline: isOnline, session: session, profile: profile))

        case .statusCleared(let user):
            return updateStatus(of: user, to: nil)
        }
    }

    /// Drops everything known about `room` (after leaving it); reports nothing.
    public mutating func forget(room: RoomName) {
        memberships[room] = nil
    }

    private mutating func updateStatus(of user: UserID, to status: Status?) -> [PresenceChange] {
        let rooms = memberships.compactMap { room, members in members[user] == nil ? nil : room }.sorted()
        let before = rooms.map { presentMember(room: $0, user: user) }
        statuses[user] = status
        return zip(rooms, before).compactMap { room, before in
            change(room: room, user: user, before: before, reason: .wentOffline)
        }
    }

    private func presentMember(room: RoomName, user: UserID) -> ChatMember? {
        guard let membership = memberships[room]?[user], let status = statuses[user], status.isOnline,
            status.session == membership.session
        else { return nil }
        return ChatMember(id: user, profile: membership.profile)
    }

    private func change(room: RoomName, user: UserID, before: ChatMember?, reason: PresenceChange.AbsenceReason)
        -> PresenceChange?
    {
        let after = presentMember(room: room, user: user)
        switch (before, after) {
        case (nil, let now?): return PresenceChange(room: room, member: now, kind: .present)
        case (let then?, nil): return PresenceChange(room: room, member: then, kind: .absent(reason))
        case (nil, nil), (_?, _?): return nil
        }
    }
}
