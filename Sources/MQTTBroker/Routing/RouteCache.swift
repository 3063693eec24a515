import MQTTCore

/// The subscribers that recently routed topics matched, so that a topic published to again is routed with one hash
/// of its bytes instead of a walk of the subscription trie (a hash and a comparison per level).
///
/// Never stale: ``SubscriptionIndex`` clears it on every subscribe and unsubscribe. Bounded: it holds at most
/// ``capacity`` topics and ``maximumMatches`` (subscriber, QoS) pairs in all, and once full it takes no new topics
/// until the next clear, so a workload of many distinct topics pays one failed lookup per message. It starts
/// storing only after ``warmUpRoutes`` routings without a subscription change, so subscriptions that change all
/// the time (clients joining and leaving) do not pay for filling a cache that is cleared again at once.
struct RouteCache<Subscriber: Hashable> {
    /// One subscriber a topic is delivered to, at the highest QoS among its matching filters.
    struct Match {
        var subscriber: Subscriber
        var qos: QoS
    }

    /// The most topics held.
    let capacity: Int
    /// The most (subscriber, QoS) pairs held over all topics (a topic with 10,000 subscribers holds 10,000).
    let maximumMatches: Int
    /// Routings since the last clear before anything is stored.
    let warmUpRoutes: Int

    /// Where a caller found its last route, which its next lookup tries first: most publishers send to one topic
    /// again and again, so a comparison of the topic's bytes with the key at that place answers the lookup without
    /// hashing them. Each publisher's connection keeps its own, so publishers taking turns (pairs, fan-in to many
    /// topics) do not overwrite each other's. It holds a position in the dictionary, not the route itself: valid
    /// only while the dictionary is unchanged since it was taken (its ``generation``), it pins nothing the cache
    /// has dropped. A hint belongs to the cache that made it (the broker has one, on its core's loop).
    struct Hint {
        fileprivate let generation: UInt64
        fileprivate let index: Dictionary<UTF8Key<String>, [Match]>.Index
    }

    private var routes: [UTF8Key<String>: [Match]] = [:]
    private var heldMatches = 0
    private var routesSinceClear = 0
    /// Changes with every change of ``routes`` (which moves its indices); a hint taken under another generation
    /// is ignored.
    private var generation: UInt64 = 0

    init(capacity: Int = 4096, maximumMatches: Int = 65_536, warmUpRoutes: Int = 32) {
        self.capacity = capacity
        self.maximumMatches = maximumMatches
        self.warmUpRoutes = warmUpRoutes
    }

    /// The number of topics held.
    var count: Int { routes.count }

    /// The matches stored for `topic` (compared byte for byte), counting the routing. `hint` is tried first, and
    /// is set to what was found.
    mutating func lookup(_ topic: String, hint: inout Hint?) -> [Match]? {
        routesSinceClear &+= 1
        guard !routes.isEmpty else { return nil }
        // Byte for byte, as the dictionary compares (String's `==` is canonical equivalence, which MQTT forbids).
        if let hint, hint.generation == generation {
            let (key, matches) = routes[hint.index]  // valid: the dictionary has not changed since it was taken
            if key == UTF8Key(topic) { return matches }
        }
        guard let index = routes.index(forKey: UTF8Key(topic)) else { return nil }
        hint = Hint(generation: generation, index: index)
        return routes[index].value
    }

    /// The matches stored for `topic`, for a caller that keeps no hint.
    mutating func lookup(_ topic: String) -> [Match]? {
        var hint: Hint?
        return lookup(topic, hint: &hint)
    }

    /// Whether ``store(_:for:)`` would keep a new topic now (warm and not full): the caller only gathers the
    /// matches into an array then.
    var acceptsNewRoutes: Bool { routesSinceClear >= warmUpRoutes && routes.count < capacity }

    /// Stores what the trie matched for `topic`, if the cache is warm and has room.
    mutating func store(_ matches: [Match], for topic: String) {
        guard acceptsNewRoutes, heldMatches + matches.count <= maximumMatches else { return }
        routes[UTF8Key(topic)] = matches
        heldMatches += matches.count
        generation &+= 1  // no hint outlives a change of what the dictionary holds
    }

    /// Forgets every stored route (the subscriptions changed).
    mutating func clear() {
        if !routes.isEmpty {
            routes.removeAll(keepingCapacity: true)
            heldMatches = 0
        }
        generation &+= 1
        routesSinceClear = 0
    }
}
