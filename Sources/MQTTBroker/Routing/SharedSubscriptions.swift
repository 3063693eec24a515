import MQTTCore

/// A shared subscription's filter, `$share/{ShareName}/{filter}` (MQTT 5.0 4.8.2): the group and the filter its
/// members share.
struct SharedFilter: Hashable, Sendable {
    /// The share name.
    let group: String
    /// The topic filter the group subscribes to.
    let filter: String

    /// The parts of `filter` when it names a shared subscription; nil for an ordinary filter. A share name is at
    /// least one character without `/`, `+` or `#`, followed by a non-empty filter (MQTT-4.8.2-1, -2).
    init?(_ filter: String) {
        guard filter.hasPrefix("$share/") else { return nil }
        let rest = filter.dropFirst("$share/".count)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let group = rest[..<slash]
        let inner = rest[rest.index(after: slash)...]
        guard !group.isEmpty, !inner.isEmpty, !group.contains("+"), !group.contains("#") else { return nil }
        self.group = String(group)
        self.filter = String(inner)
    }

    /// Whether `filter` claims to be shared (starts with `$share/`), well-formed or not.
    static func isShared(_ filter: String) -> Bool { filter.hasPrefix("$share/") }
}

/// The shared subscriptions (MQTT 5.0 4.8.2): each group matching a message sends it to one of its members,
/// in turn (round robin), preferring members that are online, as mosquitto does.
///
/// Confined to the core's event loop, like the rest of the routing state.
final class SharedSubscriptions {
    /// The members of one group, in the order they joined, and whose turn is next.
    private struct Group {
        var members: [(key: SessionKey, qos: QoS)] = []
        var next = 0
    }

    private let index = SubscriptionIndex<SharedFilter>()
    @exclusivity(unchecked) private var groups: [SharedFilter: Group] = [:]

    /// Whether any shared subscription exists (routing skips the index otherwise).
    var isEmpty: Bool { groups.isEmpty }

    /// The number of (session, shared filter) subscriptions.
    var count: Int { groups.values.reduce(0) { $0 + $1.members.count } }

    /// Adds `key` to the group of `shared` at `qos`, or changes its QoS.
    func subscribe(_ key: SessionKey, to shared: SharedFilter, qos: QoS) {
        var group = groups[shared] ?? Group()
        if let position = group.members.firstIndex(where: { $0.key == key }) {
            group.members[position].qos = qos
        } else {
            group.members.append((key, qos))
        }
        if groups[shared] == nil { index.subscribe(shared, to: shared.filter, qos: .exactlyOnce) }
        groups[shared] = group
    }

    /// Removes `key` from the group of `shared`; the group goes when its last member does.
    func unsubscribe(_ key: SessionKey, from shared: SharedFilter) {
        guard var group = groups[shared], let position = group.members.firstIndex(where: { $0.key == key }) else {
            return
        }
        group.members.remove(at: position)
        if position < group.next { group.next -= 1 }
        if group.members.isEmpty {
            groups[shared] = nil
            index.unsubscribe(shared, from: shared.filter)
        } else {
            group.next %= group.members.count
            groups[shared] = group
        }
    }

    /// Whether a group's filter matches `topic` (nobody's turn moves).
    func hasGroup(matching topic: String) -> Bool {
        var found = false
        index.forEachMatch(topic: topic) { _, _ in found = true }
        return found
    }

    /// For each group whose filter matches `topic`, the member whose turn it is among those `eligible` accepts
    /// (online first, then any that will queue it), with its granted QoS; the turn moves past it.
    func forEachDelivery(
        topic: String, eligible: (SessionKey) -> SharedMemberState, _ body: (SharedFilter, SessionKey, QoS) -> Void
    ) {
        var matched: [SharedFilter] = []
        index.forEachMatch(topic: topic) { shared, _ in matched.append(shared) }
        for shared in matched {
            guard var group = groups[shared], !group.members.isEmpty else { continue }
            let count = group.members.count
            var chosen: Int?
            var fallback: Int?
            for step in 0..<count {
                let position = (group.next + step) % count
                switch eligible(group.members[position].key) {
                case .online: chosen = position
                case .offline: if fallback == nil { fallback = position }
                case .excluded: break
                }
                if chosen != nil { break }
            }
            guard let position = chosen ?? fallback else { continue }
            group.next = (position + 1) % count
            groups[shared] = group
            body(shared, group.members[position].key, group.members[position].qos)
        }
    }
}

/// Whether a group member can take a message now.
enum SharedMemberState {
    /// Connected: it gets the message now.
    case online
    /// Offline, but its session keeps what it is sent (taken when nobody is online).
    case offline
    /// Gone, or the ACL forbids it the topic.
    case excluded
}
