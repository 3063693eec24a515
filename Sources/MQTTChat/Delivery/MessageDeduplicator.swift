/// Remembers the ids of the most recently seen messages so a redelivered copy is recognised.
///
/// QoS 1 delivers "at least once": after a reconnect the broker may send a message again, and a
/// sender may retransmit. The chat layer gives every envelope a unique id and drops ids it has
/// already seen. Memory is bounded: only the `capacity` most recently *seen* ids are kept (seeing
/// an id again refreshes it), so the least recently seen id is forgotten first.
public struct MessageDeduplicator: Sendable {
    /// How many ids are remembered.
    public let capacity: Int

    /// id → the tick it was last seen at.
    private var lastSeen: [String: UInt64] = [:]
    /// (id, tick) in the order they were seen; entries whose tick is stale are skipped on eviction.
    private var order: [(id: String, tick: UInt64)] = []
    /// Index of the oldest live entry in `order`.
    private var head = 0
    private var tick: UInt64 = 0

    /// Remembers up to `capacity` ids (at least one).
    public init(capacity: Int = 4096) {
        self.capacity = max(1, capacity)
    }

    /// How many ids are remembered right now.
    public var count: Int { lastSeen.count }

    /// Whether `id` is among the remembered ids (does not refresh it).
    public func contains(_ id: String) -> Bool { lastSeen[id] != nil }

    /// Records `id` as seen. Returns `true` the first time (deliver it), `false` for a duplicate (drop it).
    public mutating func markSeen(_ id: String) -> Bool {
        tick &+= 1
        let isNew = lastSeen.updateValue(tick, forKey: id) == nil
        order.append((id, tick))
        while lastSeen.count > capacity { evictOldest() }
        compactIfNeeded()
        return isNew
    }

    private mutating func evictOldest() {
        while head < order.count {
            let entry = order[head]
            head += 1
            if lastSeen[entry.id] == entry.tick {
                lastSeen[entry.id] = nil
                return
            }
        }
    }

    /// Drops consumed and stale entries once they make up more than half of `order`.
    private mutating func compactIfNeeded() {
        guard order.count > 2 * capacity + 16 else { return }
        order = order[head...].filter { lastSeen[$0.id] == $0.tick }
        head = 0
    }
}
