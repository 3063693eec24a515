/// What serves the broker's plain-TCP sockets (`socket_engine`).
public enum SocketEngine: String, Sendable, Hashable, CaseIterable {
    /// The broker's own epoll loop (``EpollSocketTransport``) when sockets are served on one loop
    /// (``BrokerConfiguration/eventLoopCount`` is 1), SwiftNIO otherwise. The config file's `auto`.
    case automatic = "auto"
    /// SwiftNIO's event loops and channels for every socket, as before the broker had a loop of its own; it parks
    /// idle connections (``BrokerConfiguration/parkIdleConnectionsAfter``). The config file's `nio`.
    case swiftNIO = "nio"

    /// Whether a broker serving its sockets on `eventLoopCount` loops runs its core on its own epoll loop.
    func usesEpoll(eventLoopCount: Int) -> Bool {
        switch self {
        case .automatic: eventLoopCount <= 1
        case .swiftNIO: false
        }
    }
}
