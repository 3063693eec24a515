/// Computes who is present in which room. Live traffic is the truth; retained messages are only a cache.
///
/// A user is present in a room when either holds:
/// - it was **heard live** there (its JOIN announcement or a heartbeat) within
///   ``missedHeartbeatsAllowed`` × the heartbeat interval it announced, and no offline status (its will) for that
///   session came since; or
/// - its **retained membership** (`rooms/<room>/members/<user>`) is known, its status is online *with the same
///   session id*, and the membership is younger than the liveness timeout (a fast first view on a single broker;
///   a clustered broker does not share retained messages between nodes, so nothing may depend on them).
///
/// An offline status for a session (the will, delivered live on every node) removes that session from every room
/// at once. Heartbeats that were already on their way are ignored for one timeout after a live offline status,
/// so a member does not flicker back. Inputs may arrive in any order.
///
/// The tracker is a pure value type: it never does I/O and never reads a clock. Time is passed in (`now:`), so
/// timeouts are tested without sleeping; the ``ChatClient`` calls ``expire(now:)`` periodically.
public struct PresenceTracker: Sendable {
    /// An instant of the clock the caller uses.
    public typealias Instant = ContinuousClock.Instant

    /// How many heartbeat intervals a member may stay silent before it is dropped (the design notes' timeout:
    /// about 10 s with the default 3 s interval).
    public static let missedHeartbeatsAllowed = 3

    /// The longest announced interval believed: a buggy or hostile heartbeat announcing days would keep a dead member
    /// present for days. Five times the longest interval ``HeartbeatSchedule`` announces with its default base.
    public static let longestInterval = Duration.seconds(300)

    /// The heartbeat interval assumed when a member did not announce one (a JOIN, a retained membership, an older
    /// client); `nil` disables every timeout (presence by retained messages and wills only, as before heartbeats).
    public let defaultInterval: Duration?

    private struct Cached: Sendable, Hashable {
        var session: String
        var profile: UserProfile
        /// When this cached membership stops counting unless the member is heard live; `nil`: never.
        var expiresAt: Instant?
        /// Set once it expired: a retained copy is never proof of life again (until a new one arrives).
        var stale = false
    }

    private struct Live: Sendable, Hashable {
        var session: String
        var profile: UserProfile
        var expiresAt: Instant?
    }

    private struct Status: Sendable, Hashable {
        var isOnline: Bool
        var session: String
    }

    /// A session whose will (a live offline status) was received: its late heartbeats are ignored until `until`.
    private struct DeadSession: Sendable, Hashable {
        var session: String
        var until: Instant?
    }

    private var cached: [RoomName: [UserID: Cached]] = [:]
    private var live: [RoomName: [UserID: Live]] = [:]
    private var statuses: [UserID: Status] = [:]
    private var dead: [UserID: DeadSession] = [:]

    /// A tracker that assumes `defaultInterval` for members that announce no heartbeat interval; `nil` never times
    /// anybody out.
    public init(defaultInterval: Duration? = nil) {
        self.defaultInterval = defaultInterval
    }

    /// How long a member announcing `interval` (or the default, for `nil`) may stay silent; `nil`: forever.
    public func timeout(forInterval interval: Duration?) -> Duration? {
        (interval ?? defaultInterval).map { min($0, Self.longestInterval) * Self.missedHeartbeatsAllowed }
    }

    /// The members present in `room`, sorted by id.
    public func members(of room: RoomName) -> [ChatMember] {
        users(in: room).compactMap { presentMember(room: room, user: $0) }
    }

    /// Whether `user` is present in `room`.
    public func isPresent(_ user: UserID, in room: RoomName) -> Bool {
        presentMember(room: room, user: user) != nil
    }

    /// Whether `user` is online: heard live in some room, or its latest status says online; `nil` when neither a
    /// status nor a heartbeat is known for it. (Heard live counts because on a clustered broker the retained status
    /// of a user connected to another node is never replayed here.)
    public func isOnline(_ user: UserID) -> Bool? {
        if live.values.contains(where: { $0[user] != nil }) { return true }
        return statuses[user]?.isOnline
    }

    /// Rooms in which the tracker knows any member, cached or live.
    public var knownRooms: [RoomName] { Set(cached.keys).union(live.keys).sorted() }

    /// The earliest instant at which ``expire(now:)`` would drop someone; `nil` when nothing can time out.
    public var nextDeadline: Instant? {
        let liveDeadlines = live.values.flatMap { $0.values.compactMap(\.expiresAt) }
        let cacheDeadlines = cached.values.flatMap { $0.values.filter { !$0.stale }.compactMap(\.expiresAt) }
        return (liveDeadlines + cacheDeadlines).min()
    }

    /// Applies `input`, received at `now`, and returns the resulting changes of presence (empty if nobody appeared
    /// or disappeared). `retained` says the message was a retained copy replayed by the broker rather than live
    /// traffic: a replayed offline status is old news and must not mute the session's live heartbeats.
    public mutating func apply(_ input: PresenceInput, now: Instant, retained: Bool = false) -> [PresenceChange] {
        switch input {
        case .membership(let room, let user, let session, let profile):
            let before = presentMember(room: room, user: user)
            cached[room, default: [:]][user] = Cached(
                session: session, profile: profile, expiresAt: timeout(forInterval: nil).map { now + $0 })
            return change(room: room, user: user, before: before, reason: .wentOffline).map { [$0] } ?? []

        case .membershipCleared(let room, let user):
            let before = presentMember(room: room, user: user)
            cached[room]?[user] = nil
            live[room]?[user] = nil
            dropEmpty(room)
            return change(room: room, user: user, before: before, reason: .leftRoom).map { [$0] } ?? []

        case .heard(let room, let user, let session, let profile, let interval):
            if let muted = dead[user], muted.session == session, muted.until.map({ now < $0 }) ?? true { return [] }
            let before = presentMember(room: room, user: user)
            live[room, default: [:]][user] = Live(
                session: session, profile: profile, expiresAt: timeout(forInterval: interval).map { now + $0 })
            return change(room: room, user: user, before: before, reason: .wentOffline).map { [$0] } ?? []

        case .status(let user, let isOnline, let session, _):
            return updateStatus(of: user, to: Status(isOnline: isOnline, session: session), now: now, retained: retained)

        case .statusCleared(let user):
            return updateStatus(of: user, to: nil, now: now, retained: retained)
        }
    }

    /// Drops every member not heard from in time, as of `now`: live members after
    /// ``missedHeartbeatsAllowed`` of their announced intervals, cache-only members after as many default intervals.
    public mutating func expire(now: Instant) -> [PresenceChange] {
        var changes: [PresenceChange] = []
        for room in knownRooms {
            for user in users(in: room) {
                let before = presentMember(room: room, user: user)
                if let deadline = live[room]?[user]?.expiresAt, deadline <= now {
                    live[room]?[user] = nil
                    // Silent past its timeout: a retained copy must not bring it back.
                    cached[room]?[user]?.stale = true
                }
                if let deadline = cached[room]?[user]?.expiresAt, deadline <= now { cached[room]?[user]?.stale = true }
                if let change = change(room: room, user: user, before: before, reason: .timedOut) {
                    changes.append(change)
                }
            }
            dropEmpty(room)
        }
        dead = dead.filter { _, muted in muted.until.map { now < $0 } ?? true }
        return changes
    }

    /// Drops everything known about `room` (after leaving it); reports nothing.
    public mutating func forget(room: RoomName) {
        cached[room] = nil
        live[room] = nil
    }

    private mutating func updateStatus(of user: UserID, to status: Status?, now: Instant, retained: Bool)
        -> [PresenceChange]
    {
        let rooms = knownRooms.filter { cached[$0]?[user] != nil || live[$0]?[user] != nil }
        let before = rooms.map { presentMember(room: $0, user: user) }
        statuses[user] = status
        if let status, !status.isOnline {
            // The will (or a goodbye) of this session: it is gone from every room, whatever we heard before.
            for room in rooms where live[room]?[user]?.session == status.session { live[room]?[user] = nil }
            if !retained { dead[user] = DeadSession(session: status.session, until: timeout(forInterval: nil).map { now + $0 }) }
        } else if let status, !retained, dead[user]?.session == status.session {
            dead[user] = nil  // the same session reconnected and said so
        }
        return zip(rooms, before).compactMap { room, before in
            change(room: room, user: user, before: before, reason: .wentOffline)
        }
    }

    private func users(in room: RoomName) -> [UserID] {
        Set((cached[room] ?? [:]).keys).union((live[room] ?? [:]).keys).sorted()
    }

    private mutating func dropEmpty(_ room: RoomName) {
        if cached[room]?.isEmpty == true { cached[room] = nil }
        if live[room]?.isEmpty == true { live[room] = nil }
    }

    private func presentMember(room: RoomName, user: UserID) -> ChatMember? {
        if let heard = live[room]?[user] { return ChatMember(id: user, profile: heard.profile) }
        guard let membership = cached[room]?[user], !membership.stale, let status = statuses[user], status.isOnline,
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
