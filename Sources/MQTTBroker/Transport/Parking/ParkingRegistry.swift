import Logging
import NIOCore

/// How often connections parked and came back.
struct ParkCounts: Sendable, Equatable {
    /// Connections that gave up their channel.
    var parked = 0
    /// Parked connections that got a channel back.
    var unparked = 0
}

/// The broker's side of parking idle connections (`park_idle_connections_after_ms`): the parked sockets, the
/// ``SocketWatcher`` that watches them, and the ``SocketAdopter`` that hands them back to NIO. The connection's side
/// is ``ParkingState`` and its glue in the connection. Exists only when the broker accepts its plain-TCP sockets
/// itself and parking is on.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class ParkingRegistry {
    /// How long a connection must be quiet before it parks.
    let delay: TimeAmount
    /// Watches parked sockets (and the plain listeners).
    let watcher: SocketWatcher
    /// Gives sockets to NIO: newly accepted ones, and parked ones coming back.
    let adopter: SocketAdopter
    private let eventLoop: any EventLoop
    private let logger: Logger
    /// The parked connections, by the descriptor the watcher reports.
    @exclusivity(unchecked) private(set) var connections: [CInt: BrokerConnectionHandler] = [:]
    /// How many times connections parked and came back (`$SYS`, diagnostics and tests).
    @exclusivity(unchecked) private(set) var counts = ParkCounts()

    init(delay: TimeAmount, watcher: SocketWatcher, adopter: SocketAdopter, eventLoop: any EventLoop, logger: Logger) {
        self.delay = delay
        self.watcher = watcher
        self.adopter = adopter
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// `connection` parked on `parked`: watch its socket. Returns false when the watcher refused it.
    func parked(_ connection: BrokerConnectionHandler, _ parked: ParkedSocket) -> Bool {
        do {
            try watcher.watch(parked.descriptor, ticket: parked.ticket)
        } catch {
            logger.warning("could not park an idle connection", metadata: ["error": "\(error)"])
            return false
        }
        connections[parked.descriptor] = connection
        counts.parked += 1
        return true
    }

    /// Stops watching a parked socket (it closes, or goes back to NIO). The socket is still open, so no other
    /// connection can hold its descriptor number in the registry.
    func release(_ parked: ParkedSocket) {
        watcher.unwatch(parked.descriptor)
        connections[parked.descriptor] = nil
    }

    /// Hands a parked socket back to NIO for `connection`; the new channel attaches itself
    /// (``BrokerConnectionHandler/attach(_:)``).
    func unpark(_ connection: BrokerConnectionHandler, _ parked: ParkedSocket) {
        release(parked)
        let bound = NIOLoopBound((connection, parked), eventLoop: eventLoop)
        let coreLoop = eventLoop
        adopter.adopt(parked.descriptor, unparking: NIOLoopBound(connection, eventLoop: eventLoop))
            .whenFailure { _ in
                coreLoop.execute { bound.value.0.unparkFailed(bound.value.1) }
            }
    }

    /// A parked connection is on a channel again.
    func unparked() {
        counts.unparked += 1
    }

    /// The watcher saw these parked sockets readable or closed: bring their connections back.
    func socketsReady(_ tickets: [SocketWatcher.Ticket]) {
        for ticket in tickets {
            guard let connection = connections[SocketWatcher.descriptor(of: ticket)],
                let parked = connection.transport as? ParkedSocket, parked.ticket == ticket
            else { continue }
            connection.unpark()
        }
    }
}
