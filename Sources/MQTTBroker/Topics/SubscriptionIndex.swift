import MQTTCore

/// The subscription index: a trie over topic levels with `+` and `#` children, so matching a topic costs
/// time proportional to its depth and to the subscriptions that actually match, not to the number of unrelated
/// subscriptions.
///
/// Generic over the subscriber key so it can be unit tested with plain strings. Not thread-safe: the broker
/// keeps it confined to its event loop.
final class SubscriptionIndex<Subscriber: Hashable> {
    private final class Node {
        var children: [Substring: Node] = [:]
        var plus: Node?
        var hash: Node?
        var subscribers: [Subscriber: QoS] = [:]

        var isEmpty: Bool { children.isEmpty && plus == nil && hash == nil && subscribers.isEmpty }
    }

    private let root = Node()

    /// The number of (subscriber, filter) pairs stored.
    private(set) var count = 0

    init() {}

    /// Adds or replaces the subscription of `subscriber` to `filter`. Returns true when it is new.
    @discardableResult
    func subscribe(_ subscriber: Subscriber, to filter: String, qos: QoS) -> Bool {
        var node = root
        for level in filter.split(separator: "/", omittingEmptySubsequences: false) {
            node = Self.child(of: node, for: level)
        }
        let isNew = node.subscribers.updateValue(qos, forKey: subscriber) == nil
        if isNew { count += 1 }
        return isNew
    }

    /// Removes the subscription of `subscriber` to `filter`. Returns whether it existed.
    @discardableResult
    func unsubscribe(_ subscriber: Subscriber, from filter: String) -> Bool {
        let levels = filter.split(separator: "/", omittingEmptySubsequences: false)
        let removed = Self.remove(subscriber, levels: levels[...], from: root)
        if removed { count -= 1 }
        return removed
    }

    /// Every subscriber whose filters match `topic`, each once, with the highest QoS among its matching
    /// filters (MQTT-3.3.5-1). Filters starting with a wildcard never match topics starting with `$` (MQTT-4.7.2-1).
    func matches(topic: String) -> [Subscriber: QoS] {
        var result: [Subscriber: QoS] = [:]
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false)
        let isDollarTopic = topic.first == "$"
        Self.collect(root, levels: levels, index: 0, wildcardsAllowed: !isDollarTopic, into: &result)
        return result
    }

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
            if let existing = node.children[level] { return existing }
            let new = Node()
            node.children[level] = new
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
            guard let next = node.children[level], remove(subscriber, levels: rest, from: next) else { return false }
            if next.isEmpty { node.children[level] = nil }
        }
        return true
    }

    private static func collect(
        _ node: Node, levels: [Substring], index: Int, wildcardsAllowed: Bool, into result: inout [Subscriber: QoS]
    ) {
        // "a/#" matches "a" itself and everything below it.
        if wildcardsAllowed, let hash = node.hash {
            add(hash.subscribers, into: &result)
        }
        guard index < levels.count else {
            add(node.subscribers, into: &result)
            return
        }
        if let next = node.children[levels[index]] {
            collect(next, levels: levels, index: index + 1, wildcardsAllowed: true, into: &result)
        }
        if wildcardsAllowed, let plus = node.plus {
            collect(plus, levels: levels, index: index + 1, wildcardsAllowed: true, into: &result)
        }
    }

    private static func add(_ subscribers: [Subscriber: QoS], into result: inout [Subscriber: QoS]) {
        for (subscriber, qos) in subscribers {
            if let existing = result[subscriber], existing >= qos { continue }
            result[subscriber] = qos
        }
    }
}
