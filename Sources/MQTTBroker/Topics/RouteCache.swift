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

    private var routes: [UTF8Key<String>: [Match]] = [:]
    private var heldMatches = 0
    private var routesSinceClear = 0
    /// The topic found last and its matches: a publisher's read batch routes the same topic again and again (and
    /// the decoder hands over the same string each time), which a string comparison answers without hashing the
    /// topic's bytes for the dictionary. Its matches are the dictionary's, so it is exactly as fresh.
    private var lastFound: (topic: String, matches: [Match])?

    init(capacity: Int = 4096, maximumMatches: Int = 65_536, warmUpRoutes: Int = 32) {
        self.capacity = capacity
        self.maximumMatches = maximumMatches
        self.warmUpRoutes = warmUpRoutes
    }

    /// The number of topics held.
    var count: Int { routes.count }

    /// The matches stored for `topic` (compared byte for byte), counting the routing.
    mutating func lookup(_ topic: String) -> [Match]? {
        routesSinceClear &+= 1
        guard !routes.isEmpty else { return nil }
        // Byte for byte, as the dictionary compares (String's `==` is canonical equivalence, which MQTT forbids).
        if let lastFound, UTF8Key(lastFound.topic) == UTF8Key(topic) { return lastFound.matches }
        guard let matches = routes[UTF8Key(topic)] else { return nil }
        lastFound = (topic, matches)
        return matches
    }

    /// Whether ``store(_:for:)`` would keep a new topic now (warm and not full): the caller only gathers the
    /// matches into an array then.
    var acceptsNewRoutes: Bool { routesSinceClear >= warmUpRoutes && routes.count < capacity }

    /// Stores what the trie matched for `topic`, if the cache is warm and has room.
    mutating func store(_ matches: [Match], for topic: String) {
        guard acceptsNewRoutes, heldMatches + matches.count <= maximumMatches else { return }
        routes[UTF8Key(topic)] = matches
        heldMatches += matches.count
        lastFound = nil  // the memo never outlives a change of what the dictionary holds
    }

    /// Forgets every stored route (the subscriptions changed).
    mutating func clear() {
        if !routes.isEmpty {
            routes.removeAll(keepingCapacity: true)
            heldMatches = 0
        }
        lastFound = nil
        routesSinceClear = 0
    }
}
