/// When a member announces itself in each joined room. The interval grows with the room, so presence traffic stays
/// bounded as rooms grow (see TOPICS.md, "Why this shape").
///
/// The rule: a room of `n` known members (the sender included) gets `base × k` with `k = ceil(n / 10)`, at least 1
/// and at most ``maxMultiplier``. Every member sends one heartbeat per interval and the broker fans each out to the
/// `n` members, so a room costs about `n² / (base × n / 10) = 10 n / base` deliveries per second: linear in `n`
/// instead of quadratic (up to `10 × maxMultiplier` members; beyond that rooms should shard). Each heartbeat carries
/// its interval, so receivers time its sender out at 3 × the *announced* interval and members never need to agree.
///
/// A pure value: the ``ChatClient`` calls ``roomsDue(tick:memberCounts:)`` once per `base` and publishes.
public struct HeartbeatSchedule: Sendable {
    /// Members per step of the multiplier.
    public static let membersPerStep = 10
    /// The largest multiplier of the base interval (60 s for the default 3 s).
    public static let maxMultiplier = 20

    /// The interval of a small room (the configured ``ChatClientConfiguration/heartbeatInterval``).
    public let base: Duration
    /// Per room: the tick of its last heartbeat and the multiplier it announced.
    private var sent: [RoomName: (tick: Int, multiplier: Int)] = [:]

    /// A schedule with `base` as the interval of rooms up to ``membersPerStep`` members.
    public init(base: Duration) { self.base = base }

    /// The multiplier of ``base`` for a room of `memberCount` members.
    public static func multiplier(memberCount: Int) -> Int {
        min(max(1, (memberCount + membersPerStep - 1) / membersPerStep), maxMultiplier)
    }

    /// The heartbeat interval of a room of `memberCount` members.
    public func interval(memberCount: Int) -> Duration { base * Self.multiplier(memberCount: memberCount) }

    /// The rooms whose heartbeat is due at `tick` (one tick per ``base``), each with the interval to announce.
    /// A room is due when its interval has passed or its multiplier changed (so a grown interval is announced before
    /// receivers would time the sender out under the old one); a room never sent in is due at once.
    public mutating func roomsDue(tick: Int, memberCounts: [RoomName: Int]) -> [(room: RoomName, interval: Duration)] {
        sent = sent.filter { memberCounts[$0.key] != nil }
        var due: [(room: RoomName, interval: Duration)] = []
        for (room, count) in memberCounts.sorted(by: { $0.key < $1.key }) {
            let multiplier = Self.multiplier(memberCount: count)
            if let last = sent[room], last.multiplier == multiplier, tick - last.tick < multiplier { continue }
            sent[room] = (tick, multiplier)
            due.append((room, base * multiplier))
        }
        return due
    }

    /// Forgets when `room` was last announced, so it is due at the next tick (after a reconnect, a fresh join).
    public mutating func reset(_ room: RoomName? = nil) {
        if let room { sent[room] = nil } else { sent.removeAll() }
    }
}
