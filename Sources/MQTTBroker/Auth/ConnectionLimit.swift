/// The `max_connections` rule: how many sockets the broker keeps open at once.
///
/// Counts every accepted socket, connected or still waiting for CONNECT, as mosquitto does; a socket beyond the
/// limit is closed as soon as it is accepted, before any byte is read. mosquitto counts per listener; this
/// broker counts across all its listeners (it has no per-listener settings).
public struct ConnectionLimit: Sendable, Hashable {
    /// The limit; nil means unlimited.
    public let maximum: Int?

    /// `max_connections` semantics: -1 (mosquitto's default) and 0 mean unlimited.
    public init(maxConnections: Int) {
        maximum = maxConnections > 0 ? maxConnections : nil
    }

    /// Whether one more socket may be kept open while `openConnections` are.
    public func admits(openConnections: Int) -> Bool {
        guard let maximum else { return true }
        return openConnections < maximum
    }
}
