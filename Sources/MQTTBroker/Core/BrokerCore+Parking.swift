import NIOCore

/// How often connections parked and came back.
struct ParkCounts: Sendable, Equatable {
    /// Connections that gave up their channel.
    var parked = 0
    /// Parked connections that got a channel back.
    var unparked = 0
}

/// [park] The core's side of parking idle connections (``BrokerConnectionHandler`` + Parking): the registry of
/// parked sockets and the hand-over back to NIO.
extension BrokerCore {
    /// How long a connection must be quiet before it parks; nil when parking is off (or the broker does not accept
    /// its sockets itself, as in unit tests).
    var parkingDelay: TimeAmount? {
        socketAdopter == nil ? nil : configuration.parkIdleConnectionsAfter
    }

    /// `connection` parked on `parked`: watch its socket. Returns false when the watcher refused it.
    func connectionParked(_ connection: BrokerConnectionHandler, _ parked: ParkedSocket) -> Bool {
        guard let socketWatcher else { return false }
        do {
            try socketWatcher.watch(parked.descriptor, ticket: parked.ticket)
        } catch {
            logger.warning("could not park an idle connection", metadata: ["error": "\(error)"])
            return false
        }
        parkedConnections[parked.descriptor] = connection
        parkCounts.parked += 1
        return true
    }

    /// Stops watching a parked socket (it closes, or goes back to NIO). The socket is still open, so no other
    /// connection can hold its descriptor number in the registry.
    func releaseParked(_ parked: ParkedSocket) {
        socketWatcher?.unwatch(parked.descriptor)
        parkedConnections[parked.descriptor] = nil
    }

    /// Hands a parked socket back to NIO for `connection`; the new channel attaches itself
    /// (``BrokerConnectionHandler/attach(_:)``).
    func unpark(_ connection: BrokerConnectionHandler, _ parked: ParkedSocket) {
        releaseParked(parked)
        guard let socketAdopter else {
            connection.unparkFailed(parked)
            return
        }
        let bound = NIOLoopBound((connection, parked), eventLoop: eventLoop)
        let coreLoop = eventLoop
        socketAdopter.adopt(parked.descriptor, unparking: NIOLoopBound(connection, eventLoop: eventLoop))
            .whenFailure { _ in
                coreLoop.execute { bound.value.0.unparkFailed(bound.value.1) }
            }
    }

    /// A parked connection is on a channel again.
    func connectionUnparked(_ connection: BrokerConnectionHandler) {
        parkCounts.unparked += 1
    }

    /// The watcher saw these parked sockets readable or closed: bring their connections back.
    func parkedSocketsReady(_ tickets: [SocketWatcher.Ticket]) {
        for ticket in tickets {
            guard let connection = parkedConnections[SocketWatcher.descriptor(of: ticket)],
                let parked = connection.transport as? ParkedSocket, parked.ticket == ticket
            else { continue }
            connection.unpark()
        }
    }
}
