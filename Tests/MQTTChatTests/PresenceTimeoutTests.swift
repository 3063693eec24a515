import Testing

@testable import MQTTChat

/// Presence by heartbeat, with the clock passed in: no test sleeps.
@Suite("Presence by heartbeat")
struct PresenceTimeoutTests {
    let lobby: RoomName
    let kitchen: RoomName
    let alice: UserID
    let bob: UserID
    let profile = UserProfile(name: "Alice", level: 3)
    let t0 = ContinuousClock.now
    let interval = Duration.seconds(3)

    init() throws {
        lobby = try RoomName("lobby")
        kitchen = try RoomName("kitchen")
        alice = try UserID("alice")
        bob = try UserID("bob")
    }

    private func at(_ seconds: Double) -> ContinuousClock.Instant { t0 + .seconds(seconds) }

    private func heard(_ user: UserID, in room: RoomName, session: String = "s1", interval: Duration? = .seconds(3))
        -> PresenceInput
    {
        .heard(room: room, user: user, session: session, profile: profile, interval: interval)
    }

    @Test("a heartbeat alone makes a member present; heartbeats keep it; 3 missed drop it with a timeout")
    func heartbeatsAndTimeout() {
        var tracker = PresenceTracker(defaultInterval: interval)
        #expect(tracker.apply(heard(alice, in: lobby), now: at(0)).map(\.kind) == [.present])
        for second in stride(from: 3.0, through: 30, by: 3) {
            #expect(tracker.apply(heard(alice, in: lobby), now: at(second)).isEmpty)
            #expect(tracker.expire(now: at(second + 0.5)).isEmpty)
        }
        #expect(tracker.isPresent(alice, in: lobby))
        // Last heard at 30 s: still there just before 3 × 3 s have passed, gone at 39 s.
        #expect(tracker.expire(now: at(38.9)).isEmpty)
        #expect(tracker.nextDeadline == at(39))
        let dropped = tracker.expire(now: at(39))
        #expect(dropped == [PresenceChange(room: lobby, member: ChatMember(id: alice, profile: profile), kind: .absent(.timedOut))])
        #expect(tracker.members(of: lobby).isEmpty)
        #expect(tracker.expire(now: at(60)).isEmpty)
    }

    @Test("receivers time out at 3 × the interval the sender announced, or the default when it announced none")
    func announcedInterval() {
        var tracker = PresenceTracker(defaultInterval: interval)
        _ = tracker.apply(heard(alice, in: lobby, interval: .seconds(30)), now: at(0))
        _ = tracker.apply(heard(bob, in: lobby, interval: nil), now: at(0))
        #expect(tracker.expire(now: at(9)).map(\.member.id) == [bob])
        #expect(tracker.expire(now: at(89)).isEmpty)
        #expect(tracker.expire(now: at(90)).map(\.member.id) == [alice])
        // An absurd announcement is capped: 3 × 5 minutes at most.
        _ = tracker.apply(heard(alice, in: lobby, interval: .seconds(86_400 * 40)), now: at(100))
        #expect(tracker.expire(now: at(100 + 899)).isEmpty)
        #expect(tracker.expire(now: at(100 + 900)).map(\.member.id) == [alice])
    }

    @Test("the will (a live offline status of the session) drops the member from every room at once")
    func willDropsAtOnce() {
        var tracker = PresenceTracker(defaultInterval: interval)
        _ = tracker.apply(heard(alice, in: lobby), now: at(0))
        _ = tracker.apply(heard(alice, in: kitchen), now: at(0))
        _ = tracker.apply(heard(bob, in: lobby), now: at(0))
        let changes = tracker.apply(.status(user: alice, isOnline: false, session: "s1", profile: profile), now: at(1))
        #expect(Set(changes.map(\.room)) == [lobby, kitchen])
        #expect(changes.allSatisfy { $0.kind == .absent(.wentOffline) && $0.member.id == alice })
        #expect(tracker.members(of: lobby).map(\.id) == [bob])
        // A heartbeat that was already on its way does not bring her back...
        #expect(tracker.apply(heard(alice, in: lobby), now: at(1.1)).isEmpty)
        // ...but the same session reconnecting (online again, live) and heartbeating does.
        _ = tracker.apply(.status(user: alice, isOnline: true, session: "s1", profile: profile), now: at(2))
        #expect(tracker.apply(heard(alice, in: lobby), now: at(2.1)).map(\.kind) == [.present])
    }

    @Test("a will of an older session does not drop the member's new session (takeover race)")
    func staleWillIgnored() {
        var tracker = PresenceTracker(defaultInterval: interval)
        _ = tracker.apply(heard(alice, in: lobby, session: "new"), now: at(0))
        #expect(tracker.apply(.status(user: alice, isOnline: false, session: "old", profile: profile), now: at(0.1)).isEmpty)
        #expect(tracker.isPresent(alice, in: lobby))
        // And heartbeats of the new session are not muted by the old session's will.
        #expect(tracker.apply(heard(alice, in: lobby, session: "new"), now: at(0.2)).isEmpty)
        #expect(tracker.expire(now: at(9.1)).isEmpty)
    }

    @Test("a replayed (retained) offline status does not mute live heartbeats: a cluster node may hold a stale one")
    func retainedOfflineDoesNotMute() {
        var tracker = PresenceTracker(defaultInterval: interval)
        let offline = PresenceInput.status(user: alice, isOnline: false, session: "s1", profile: profile)
        #expect(tracker.apply(offline, now: at(0), retained: true).isEmpty)
        #expect(tracker.apply(heard(alice, in: lobby), now: at(0.5)).map(\.kind) == [.present])
    }

    @Test("a member known only from the retained cache is shown at once but dropped if not heard within the timeout")
    func retainedOnlyDropped() {
        var tracker = PresenceTracker(defaultInterval: interval)
        _ = tracker.apply(.status(user: alice, isOnline: true, session: "s1", profile: profile), now: at(0), retained: true)
        _ = tracker.apply(.status(user: bob, isOnline: true, session: "b1", profile: profile), now: at(0), retained: true)
        let cached = tracker.apply(.membership(room: lobby, user: alice, session: "s1", profile: profile), now: at(0))
        #expect(cached.map(\.kind) == [.present])
        _ = tracker.apply(.membership(room: lobby, user: bob, session: "b1", profile: profile), now: at(0))
        // Bob is heard live; Alice (a leftover of a process killed where its will did not reach us) is not.
        _ = tracker.apply(heard(bob, in: lobby, session: "b1"), now: at(2))
        #expect(tracker.expire(now: at(8.9)).isEmpty)
        let dropped = tracker.expire(now: at(9))
        #expect(dropped.map(\.member.id) == [alice])
        #expect(dropped.map(\.kind) == [.absent(.timedOut)])
        #expect(tracker.members(of: lobby).map(\.id) == [bob])
        // The stale retained copy does not count again, even with her status still online.
        #expect(tracker.apply(.status(user: alice, isOnline: true, session: "s1", profile: profile), now: at(10)).isEmpty)
        // Heard live, she is back.
        #expect(tracker.apply(heard(alice, in: lobby), now: at(11)).map(\.kind) == [.present])
    }

    @Test("a member heard live is present without any retained message, and a live LEAVE removes it")
    func liveWithoutRetained() {
        var tracker = PresenceTracker(defaultInterval: interval)
        #expect(tracker.isOnline(alice) == nil)
        #expect(tracker.apply(heard(alice, in: lobby, interval: nil), now: at(0)).map(\.kind) == [.present])
        #expect(tracker.isOnline(alice) == true)  // no status needed: heard live
        #expect(tracker.apply(.membershipCleared(room: lobby, user: alice), now: at(1)).map(\.kind) == [.absent(.leftRoom)])
        #expect(tracker.expire(now: at(100)).isEmpty)
    }

    @Test("a stale retained membership of an older session is ignored when the user is heard in a new one")
    func staleSessionIgnored() {
        var tracker = PresenceTracker(defaultInterval: interval)
        _ = tracker.apply(.membership(room: lobby, user: alice, session: "old", profile: profile), now: at(0))
        _ = tracker.apply(.status(user: alice, isOnline: true, session: "new", profile: profile), now: at(0), retained: true)
        #expect(tracker.members(of: lobby).isEmpty)
        #expect(tracker.apply(heard(alice, in: lobby, session: "new"), now: at(1)).map(\.kind) == [.present])
        // The old session's will changes nothing for the new one.
        #expect(tracker.apply(.status(user: alice, isOnline: false, session: "old", profile: profile), now: at(2)).isEmpty)
        #expect(tracker.isPresent(alice, in: lobby))
    }

    @Test("without a default interval nobody times out unless it announced an interval")
    func noDefaultNoTimeout() {
        var tracker = PresenceTracker()
        _ = tracker.apply(heard(alice, in: lobby, interval: nil), now: at(0))
        _ = tracker.apply(heard(bob, in: lobby, interval: .seconds(1)), now: at(0))
        #expect(tracker.nextDeadline == at(3))
        #expect(tracker.expire(now: at(1000)).map(\.member.id) == [bob])
        #expect(tracker.members(of: lobby).map(\.id) == [alice])
    }
}

@Suite("Heartbeat schedule")
struct HeartbeatScheduleTests {
    let small: RoomName
    let big: RoomName

    init() throws {
        small = try RoomName("small")
        big = try RoomName("big")
    }

    @Test("the interval grows by one base interval per 10 members, up to 20 times the base")
    func scaling() {
        let schedule = HeartbeatSchedule(base: .seconds(3))
        #expect(schedule.interval(memberCount: 0) == .seconds(3))
        #expect(schedule.interval(memberCount: 10) == .seconds(3))
        #expect(schedule.interval(memberCount: 11) == .seconds(6))
        #expect(schedule.interval(memberCount: 100) == .seconds(30))
        #expect(schedule.interval(memberCount: 10_000) == .seconds(60))
    }

    @Test("each room is due once per its own interval, at once when new and when its interval changes")
    func due() {
        var schedule = HeartbeatSchedule(base: .seconds(3))
        let first = schedule.roomsDue(tick: 1, memberCounts: [small: 2, big: 25])
        #expect(first.map(\.room) == [big, small])
        #expect(first.map(\.interval) == [.seconds(9), .seconds(3)])
        #expect(schedule.roomsDue(tick: 2, memberCounts: [small: 2, big: 25]).map(\.room) == [small])
        #expect(schedule.roomsDue(tick: 3, memberCounts: [small: 2, big: 25]).map(\.room) == [small])
        #expect(schedule.roomsDue(tick: 4, memberCounts: [small: 2, big: 25]).map(\.room) == [big, small])
        // The small room grew: its longer interval is announced at once.
        let grown = schedule.roomsDue(tick: 4, memberCounts: [small: 12, big: 25])
        #expect(grown.map(\.room) == [small] && grown.map(\.interval) == [.seconds(6)])
        #expect(schedule.roomsDue(tick: 5, memberCounts: [small: 12, big: 25]).isEmpty)
        schedule.reset()
        #expect(schedule.roomsDue(tick: 5, memberCounts: [small: 12, big: 25]).count == 2)
    }
}
