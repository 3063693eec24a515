import MQTTCore

/// Retained messages, one per topic, stored in a trie over topic levels so a new subscription's filter walks only
/// the matching branches.
///
/// A newer retained message replaces the stored one; a retained message with an empty payload deletes it
/// (MQTT-3.3.1-10/11). Not thread-safe: confined to the broker's event loop.
final class RetainedStore {
    private final class Node {
        var children: [UTF8Key<Substring>: Node] = [:]
        var message: BrokerMessage?

        var isEmpty: Bool { children.isEmpty && message == nil }
    }

    private let root = Node()

    /// The number of stored retained messages.
    private(set) var count = 0

    init() {}

    /// Stores `message` for its topic, or deletes the stored one when the payload is empty.
    func apply(_ message: BrokerMessage) {
        let levels = MQTTTopic.levels(of: message.topic)
        if message.payload.readableBytes == 0 {
            if Self.remove(levels: levels[...], from: root) { count -= 1 }
            return
        }
        var node = root
        for level in levels {
            if let next = node.children[UTF8Key(level)] {
                node = next
            } else {
                let next = Node()
                node.children[UTF8Key(level)] = next
                node = next
            }
        }
        if node.message == nil { count += 1 }
        node.message = message
    }

    /// The retained message stored for exactly `topic`, if any.
    func message(forTopic topic: String) -> BrokerMessage? {
        var node = root
        for level in MQTTTopic.levels(of: topic) {
            guard let next = node.children[UTF8Key(level)] else { return nil }
            node = next
        }
        return node.message
    }

    /// Every retained message whose topic matches `filter`. Wildcards in the first level do not match topics
    /// starting with `$` (MQTT-4.7.2-1).
    func messages(matching filter: String) -> [BrokerMessage] {
        var result: [BrokerMessage] = []
        let levels = MQTTTopic.levels(of: filter)
        Self.collect(root, filterLevels: levels, index: 0, into: &result)
        return result
    }

    /// Every stored retained message, `$` topics included (for a persistence snapshot).
    func allMessages() -> [BrokerMessage] {
        var result: [BrokerMessage] = []
        Self.collectAll(root, into: &result)
        return result
    }

        private static func remove(levels: ArraySlice<Substring>, from node: Node) -> Bool {
        guard let level = levels.first else {
            guard node.message != nil else { return false }
            node.message = nil
            return true
        }
        guard let next = node.children[UTF8Key(level)], remove(levels: levels.dropFirst(), from: next) else { return false }
        if next.isEmpty { node.children[UTF8Key(level)] = nil }
        return true
    }

    private static func collect(_ node: Node, filterLevels: [Substring], index: Int, into result: inout [BrokerMessage]) {
        guard index < filterLevels.count else {
            if let message = node.message { result.append(message) }
            return
        }
        let isFirstLevel = index == 0
        switch filterLevels[index] {
        case "#":
            // "a/#" also matches "a" itself.
            if let message = node.message { result.append(message) }
            for (level, child) in node.children where !(isFirstLevel && MQTTTopic.startsWithDollar(level.base)) {
                collectAll(child, into: &result)
            }
        case "+":
            for (level, child) in node.children where !(isFirstLevel && MQTTTopic.startsWithDollar(level.base)) {
                collect(child, filterLevels: filterLevels, index: index + 1, into: &result)
            }
        case let level:
            if let child = node.children[UTF8Key(level)] {
                collect(child, filterLevels: filterLevels, index: index + 1, into: &result)
            }
        }
    }

    private static func collectAll(_ node: Node, into result: inout [BrokerMessage]) {
        if let message = node.message { result.append(message) }
        for child in node.children.values { collectAll(child, into: &result) }
    }
}
