/// A member appeared in or disappeared from a room, as computed by ``PresenceTracker``.
public struct PresenceChange: Sendable, Hashable {
    /// Why a member is no longer present.
    public enum AbsenceReason: Sendable, Hashable {
        /// The member left the room (its membership was cleared).
        case leftRoom
        /// The member's status went offline or unknown, e.g. its process died and the broker published its will,
        /// or its membership belongs to an older session.
        case wentOffline
        /// The member was not heard from for ``PresenceTracker/missedHeartbeatsAllowed`` of its heartbeat intervals
        /// (its process hung, its network went away without the will reaching us, or it was known only from a
        /// retained cache that no live heartbeat confirmed).
        case timedOut
    }

    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The member is now present.
        case present
        /// The member is no longer present.
        case absent(AbsenceReason)
    }

    /// The room.
    public let room: RoomName
    /// The member.
    public let member: ChatMember
    /// What happened.
    public let kind: Kind

    /// Creates a change.
    public init(room: RoomName, member: ChatMember, kind: Kind) {
        self.room = room
        self.member = member
        self.kind = kind
    }
}
