import Testing

@testable import MQTTChat

/// The retained-cache tests below have no timeouts (`defaultInterval` nil), so any instant will do.
private let epoch = ContinuousClock.now

extension PresenceTracker {
    fileprivate mutating func apply(_ input: PresenceInput) -> [PresenceChange] { apply(input, now: epoch) }
}

@Suite("Presence tracker")
struct PresenceTrackerTests {
    let lobby: RoomName
    let kitchen: RoomName
    let alice: UserID
    let bob: UserID
    let aliceProfile = UserProfile(name: "Alice", level: 3)
    let bobProfile = UserProfile(name: "Bob")

    init() throws {
        lobby = try RoomName("lobby")
        kitchen = try RoomName("kitchen")
        alice = try UserID("alice")
        bob = try UserID("bob")
    }

    private func online(_ user: UserID, _ profile: UserProfile, session: String = "s1") -> PresenceInput {
        .status(user: user, isOnline: true, session: session, profile: profile)
    }

    private func offline(_ user: UserID, _ profile: UserProfile, session: String = "s1") -> PresenceInput {
        .status(user: user, isOnline: false, session: session, profile: profile)
    }

    @Test("a member is present after join and absent after leave")
    func joinAndLeave() {
        var tracker = PresenceTracker()
        #expect(tracker.apply(online(alice, aliceProfile)).isEmpty)
        let joined = tracker.apply(.membership(room: lobby, user: alice, session: "s1", profile: aliceProfile))
        #expect(joined == [PresenceChange(room: lobby, member: ChatMember(id: alice, profile: aliceProfile), kind: .present)])
        #expect(tracker.members(of: lobby).map(\.id) == [alice])
        #expect(tracker.members(of: kitchen).isEmpty)

        let left = tracker.apply(.membershipCleared(room: lobby, user: alice))
        #expect(left.map(\.kind) == [.absent(.leftRoom)])
        #expect(tracker.members(of: lobby).isEmpty)
        #expect(tracker.apply(.membershipCleared(room: lobby, user: alice)).isEmpty)  // idempotent
    }

    @Test("membership and status may arrive in either order")
    func orderIndependent() {
        var tracker = PresenceTracker()
        #expect(tracker.apply(.membership(room: lobby, user: bob, session: "b1", profile: bobProfile)).isEmpty)
        #expect(!tracker.isPresent(bob, in: lobby))
        let changes = tracker.apply(online(bob, bobProfile, session: "b1"))
        #expect(changes.map(\.kind) == [.present])
        #expect(tracker.members(of: lobby) == [ChatMember(id: bob, profile: bobProfile)])
    }

    @Test("an offline status from a will removes the member from every room at once")
    func offlineFromWill() {
        var tracker = PresenceTracker()
        _ = tracker.apply(online(alice, aliceProfile))
        _ = tracker.apply(online(bob, bobProfile))
        for room in [lobby, kitchen] {
            _ = tracker.apply(.membership(room: room, user: alice, session: "s1", profile: aliceProfile))
        }
        _ = tracker.apply(.membership(room: lobby, user: bob, session: "s1", profile: bobProfile))

        let changes = tracker.apply(offline(alice, aliceProfile))
        #expect(Set(changes.map(\.room)) == [lobby, kitchen])
        #expect(changes.allSatisfy { $0.kind == .absent(.wentOffline) && $0.member.id == alice })
        #expect(tracker.members(of: lobby).map(\.id) == [bob])
        #expect(tracker.members(of: kitchen).isEmpty)
    }

    @Test("a stale membership from an older session does not come back with a new session")
    func staleSession() {
        var tracker = PresenceTracker()
        _ = tracker.apply(.membership(room: lobby, user: alice, session: "old", profile: aliceProfile))
        _ = tracker.apply(offline(alice, aliceProfile, session: "old"))
        #expect(tracker.apply(online(alice, aliceProfile, session: "new")).isEmpty)
        #expect(tracker.members(of: lobby).isEmpty)
        // Rejoining in the new session makes her present again.
        let rejoined = tracker.apply(.membership(room: lobby, user: alice, session: "new", profile: aliceProfile))
        #expect(rejoined.map(\.kind) == [.present])
    }

    @Test("coming back online in the same session restores presence; a cleared status removes it")
    func reconnectSameSession() {
        var tracker = PresenceTracker()
        _ = tracker.apply(online(alice, aliceProfile))
        _ = tracker.apply(.membership(room: lobby, user: alice, session: "s1", profile: aliceProfile))
        #expect(tracker.apply(offline(alice, aliceProfile)).map(\.kind) == [.absent(.wentOffline)])
        #expect(tracker.apply(online(alice, aliceProfile)).map(\.kind) == [.present])
        #expect(tracker.apply(.statusCleared(user: alice)).map(\.kind) == [.absent(.wentOffline)])
    }

    @Test("members are sorted by id")
    func sorted() {
        var tracker = PresenceTracker()
        for (user, profile) in [(bob, bobProfile), (alice, aliceProfile)] {
            _ = tracker.apply(online(user, profile))
            _ = tracker.apply(.membership(room: lobby, user: user, session: "s1", profile: profile))
        }
        #expect(tracker.members(of: lobby).map(\.id) == [alice, bob])
    }
}
