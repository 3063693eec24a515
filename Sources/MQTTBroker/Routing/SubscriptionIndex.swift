import MQTTCore

/// The subscription index: a trie over topic levels with `+` and `#` children, so matching a topic costs
/// time proportional to its depth and to the subscriptions that actually match, not to the number of unrelated
/// subscriptions.
///
/// Generic over the subscriber key so it can be unit tested with plain strings. Not thread-safe: the broker
/// keeps it confined to its event loop (hence the `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class SubscriptionIndex<Subscriber: Hashable> {
    private final class Node {
        @exclusivity(unchecked) var children: [TopicLevelKey: Node] = [:]
        @exclusivity(unchecked) var plus: Node?
        @exclusivity(unchecked) var hash: Node?
        @exclusivity(unchecked) var subscribers: [Subscriber: QoS] = [:]

        var isEmpty: Bool { children.isEmpty && plus == nil && hash == nil && subscribers.isEmpty }
    }

    private let root = Node()

    /// The number of (subscriber, filter) pairs stored.
    @exclusivity(unchecked) private(set) var count = 0

    init() {}

    /// Adds or replaces the subscription of `subscriber` to `filter`. Returns true when it is new.
    @discardableResult
    func subscribe(_ subscriber: Subscriber, to filter: String, qos: QoS) -> Bool {
        var node = root
        for level in MQTTTopic.levels(of: filter) {
            node = Self.child(of: node, for: level)
        }
        let isNew = node.subscribers.updateValue(qos, forKey: subscriber) == nil
        if isNew { count += 1 }
        routeCache.clear()
        return isNew
    }

    /// Removes the subscription of `subscriber` to `filter`. Returns whether it existed.
    @discardableResult
    func unsubscribe(_ subscriber: Subscriber, from filter: String) -> Bool {
        let levels = MQTTTopic.levels(of: filter)
        let removed = Self.remove(subscriber, levels: levels[...], from: root)
        if removed {
            count -= 1
            routeCache.clear()
        }
        return removed
    }

    /// Calls `body` once per subscriber whose filters match `topic`, with the highest QoS among its matching
    /// filters (MQTT-3.3.5-1). Filters starting with a wildcard never match topics starting with `$` (MQTT-4.7.2-1).
    ///
    /// The routing hot path: the topic's UTF-8 bytes are walked level by level in place (no split into an array, no
    /// substrings; each level is looked up with a key borrowing its bytes) and the matching nodes are collected
    /// into a scratch array the index keeps between calls. When one node matches (the usual
    /// case: one filter per subscriber) its subscribers are visited directly; only overlapping matches are merged
    /// into a dictionary. A topic routed again finds its matches in a ``RouteCache``, cleared on every change of
    /// the subscriptions. `body` may call back into the index; such a nested call just allocates its own scratch.
    func forEachMatch(topic: String, _ body: (Subscriber, QoS) -> Void) {
        var hint: RouteCache<Subscriber>.Hint?
        forEachMatch(topic: topic, hint: &hint, body)
    }

    /// ``forEachMatch(topic:_:)`` for a caller that keeps the route it found last (a publisher's connection), which
    /// spares the cache's hash of the topic when the topic is the same as last time.
    func forEachMatch(topic: String, hint: inout RouteCache<Subscriber>.Hint?, _ body: (Subscriber, QoS) -> Void) {
        if let cached = routeCache.lookup(topic, hint: &hint) {
            for match in cached {
                body(match.subscriber, match.qos)
            }
            return
        }
        forEachMatchInTrie(topic: topic, body)
    }

    /// Matches `topic` in the trie, and stores its route in the cache if the cache takes it.
    private func forEachMatchInTrie(topic: String, _ body: (Subscriber, QoS) -> Void) {
        var nodes = scratchNodes
        scratchNodes = []
        defer {
            nodes.removeAll(keepingCapacity: true)
            scratchNodes = nodes
        }
        let wildcardsAllowed = !MQTTTopic.startsWithDollar(topic)
        var topicBytes = topic  // `withUTF8` may make a non-contiguous string contiguous
        topicBytes.withUTF8 { bytes in
            Self.collect(root, topic: UnsafeRawBufferPointer(bytes), levelStart: 0, wildcardsAllowed: wildcardsAllowed, into: &nodes)
        }
        // The matches are gathered into an array only when the cache would keep it: a cold or full cache costs the
        // routing nothing beyond its failed lookup.
        guard routeCache.acceptsNewRoutes else {
            Self.visit(nodes, body)
            return
        }
        var matches: [RouteCache<Subscriber>.Match] = []
        Self.visit(nodes) { matches.append(RouteCache.Match(subscriber: $0, qos: $1)) }
        routeCache.store(matches, for: topic)
        for match in matches {
            body(match.subscriber, match.qos)
        }
    }

    /// Calls `body` once per subscriber of the matched `nodes`, at its highest QoS among them.
    private static func visit(_ nodes: [Node], _ body: (Subscriber, QoS) -> Void) {
        switch nodes.count {
        case 0:
            return
        case 1:
            for (subscriber, qos) in nodes[0].subscribers {
                body(subscriber, qos)
            }
        default:
            var merged: [Subscriber: QoS] = [:]
            for node in nodes {
                for (subscriber, qos) in node.subscribers {
                    if let existing = merged[subscriber], existing >= qos { continue }
                    merged[subscriber] = qos
                }
            }
            for (subscriber, qos) in merged {
                body(subscriber, qos)
            }
        }
    }

    /// Recently routed topics and their matches.
    @exclusivity(unchecked) private var routeCache = RouteCache<Subscriber>()

    /// Matched nodes of the last ``forEachMatch(topic:_:)``, kept for their capacity.
    @exclusivity(unchecked) private var scratchNodes: [Node] = []

    private static func child(of node: Node, for level: Substring) -> Node {
        switch level {
        case "+":
            if let plus = node.plus { return plus }
            let new = Node()
            node.plus = new
            return new
        case "#":
            if let hash = node.hash { return hash }
            let new = Node()
            node.hash = new
            return new
        default:
            let key = TopicLevelKey(owning: level)
            if let existing = node.children[key] { return existing }
            let new = Node()
            node.children[key] = new
            return new
        }
    }

    /// Removes the subscriber below `node` and prunes nodes left empty.
    private static func remove(_ subscriber: Subscriber, levels: ArraySlice<Substring>, from node: Node) -> Bool {
        guard let level = levels.first else {
            return node.subscribers.removeValue(forKey: subscriber) != nil
        }
        let rest = levels.dropFirst()
        switch level {
        case "+":
            guard let plus = node.plus, remove(subscriber, levels: rest, from: plus) else { return false }
            if plus.isEmpty { node.plus = nil }
        case "#":
            guard let hash = node.hash, remove(subscriber, levels: rest, from: hash) else { return false }
            if hash.isEmpty { node.hash = nil }
        default:
            let key = TopicLevelKey(owning: level)
            guard let next = node.children[key], remove(subscriber, levels: rest, from: next) else { return false }
            if next.isEmpty { node.children[key] = nil }
        }
        return true
    }

    /// Collects the nodes with subscribers whose filters match the topic levels from `levelStart` on (nil: the
    /// levels are used up). A topic of n separators has n + 1 levels, empty ones included ("a//b", "/a", "a/").
    private static func collect(
        _ node: Node, topic: UnsafeRawBufferPointer, levelStart: Int?, wildcardsAllowed: Bool, into nodes: inout [Node]
    ) {
        // "a/#" matches "a" itself and everything below it.
        if wildcardsAllowed, let hash = node.hash, !hash.subscribers.isEmpty {
            nodes.append(hash)
        }
        guard let levelStart else {
            if !node.subscribers.isEmpty { nodes.append(node) }
            return
        }
        var levelEnd = levelStart
        while levelEnd < topic.count, topic[levelEnd] != UInt8(ascii: "/") {
            levelEnd += 1
        }
        let nextLevelStart = levelEnd == topic.count ? nil : levelEnd + 1
        let level = UnsafeRawBufferPointer(rebasing: topic[levelStart..<levelEnd])
        if let next = node.children[TopicLevelKey(borrowing: level)] {
            collect(next, topic: topic, levelStart: nextLevelStart, wildcardsAllowed: true, into: &nodes)
        }
        if wildcardsAllowed, let plus = node.plus {
            collect(plus, topic: topic, levelStart: nextLevelStart, wildcardsAllowed: true, into: &nodes)
        }
    }
}
