/// The traffic shapes the load generator can produce.
public enum LoadScenario: String, Sendable, Hashable, CaseIterable, Codable {
    /// Fan-out: every publisher publishes on one shared topic that every subscriber subscribes to
    /// (usually 1 publisher -> N subscribers).
    case fanout
    /// Fan-in: each publisher publishes on its own topic; every subscriber subscribes to a wildcard filter that
    /// matches all of them (usually N publishers -> 1 subscriber).
    case fanin
    /// Pairs: publisher i publishes on its own topic, which only subscriber i subscribes to (N -> N, 1:1).
    case pairs
    /// Idle connections: open many connections that only keep alive; measures connect rate and broker memory.
    case idle

    /// The publisher and subscriber counts used when the caller does not choose them.
    public var defaultCounts: (publishers: Int, subscribers: Int) {
        switch self {
        case .fanout: return (1, 10)
        case .fanin: return (10, 1)
        case .pairs: return (10, 10)
        case .idle: return (0, 0)
        }
    }

    /// Whether subscriber `subscriber` receives the messages of publisher `publisher` in this scenario.
    public func delivers(publisher: Int, to subscriber: Int) -> Bool {
        switch self {
        case .fanout, .fanin: return true
        case .pairs: return publisher == subscriber
        case .idle: return false
        }
    }
}
