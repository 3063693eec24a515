import MQTTCore

/// The ACL rules of one connected client, with `%c` and `%u` already substituted: the broker asks it before
/// routing a PUBLISH, before granting a subscription and before delivering each message.
///
/// Without an `acl_file` every client gets ``unrestricted``.
public struct ClientAccessPolicy: Sendable {
    /// Allows everything (no ACL configured).
    public static let unrestricted = ClientAccessPolicy(rules: nil)

    private let reads: [ACLTopicPattern]
    private let writes: [ACLTopicPattern]
    private let denies: [ACLTopicPattern]
    private let isRestricted: Bool

    init(rules: [(AccessControlList.Access, ACLTopicPattern)]?) {
        isRestricted = rules != nil
        var reads: [ACLTopicPattern] = []
        var writes: [ACLTopicPattern] = []
        var denies: [ACLTopicPattern] = []
        for (access, pattern) in rules ?? [] {
            switch access {
            case .read: reads.append(pattern)
            case .write: writes.append(pattern)
            case .readwrite:
                reads.append(pattern)
                writes.append(pattern)
            case .deny: denies.append(pattern)
            }
        }
        self.reads = reads
        self.writes = writes
        self.denies = denies
    }

    /// The policy for a client under `acl` (``unrestricted`` when `acl` is nil).
    public init(acl: AccessControlList?, clientID: String, username: String?) {
        self = acl?.policy(clientID: clientID, username: username) ?? .unrestricted
    }

    /// Whether the client may publish to `topic`: some write grant matches and no deny does.
    public func mayPublish(to topic: String) -> Bool {
        guard isRestricted else { return true }
        return allowed(topic, by: writes)
    }

    /// Whether a message on `topic` may be delivered to the client: some read grant matches and no deny does.
    public func mayReceive(_ topic: String) -> Bool {
        guard isRestricted else { return true }
        return allowed(topic, by: reads)
    }

    /// Whether the client may subscribe to `filter` (a valid topic filter).
    ///
    /// The rule: one read grant must cover every topic the filter can match, so `mqttchat/users/+/inbox` is
    /// refused when only `mqttchat/users/%c/inbox` is readable (the `+` would also match other users' inboxes),
    /// and `#` is refused unless `#` itself is readable. A filter that lies entirely inside a `deny` is refused
    /// too. A deny that only cuts a hole in the filter (`topic read #` with `topic deny secret/#`) does not refuse
    /// it: the hole is enforced per message by ``mayReceive(_:)``, so such a subscriber still never sees the denied
    /// topics. Coverage by one rule is checked rather than by the union of several (`a/x` plus `a/+/#` do not
    /// make `a/#` subscribable); split such a subscription in two.
    public func maySubscribe(to filter: String) -> Bool {
        guard isRestricted else { return true }
        let levels = MQTTTopic.levels(of: filter)
        if denies.contains(where: { $0.covers(filterLevels: levels) }) { return false }
        return reads.contains { $0.covers(filterLevels: levels) }
    }

    private func allowed(_ topic: String, by grants: [ACLTopicPattern]) -> Bool {
        let levels = MQTTTopic.levels(of: topic)
        if denies.contains(where: { $0.matches(topicLevels: levels) }) { return false }
        return grants.contains { $0.matches(topicLevels: levels) }
    }
}
