import NIOCore

/// Parking idle connections, carrying out what ``ParkingState`` decides: a connection that has neither received anything nor had anything flushed to it
/// for `park_idle_connections_after_ms` gives up its NIO channel, and the memory that holds, and keeps only its
/// descriptor, watched by the broker's ``SocketWatcher``. It comes back on a new channel as soon as the client
/// sends anything (or closes), or something is written to it. Its session, subscriptions, will and keepalive stay
/// here meanwhile, so parking changes nothing the client can see but a little latency on the first packet back.
///
/// Only a connection with nothing in progress parks: no partial packet, no output in memory, nothing in flight or
/// queued in its session, no pause. A socket on the core's loop parks at once; a relayed one first stops reading on
/// its loop, so that every byte it already read reaches the core before the core decides.
extension BrokerConnectionHandler {
    /// When the connection should next be looked at for parking; nil when it cannot park (parking off, TLS,
    /// not connected yet, already parked or about to).
    var parkCheckDeadline: NIODeadline? {
        guard let delay = core.parking?.delay, socketDescriptor != nil else { return nil }
        switch transport?.parkingSupport {
        case .immediate, .afterStoppingReads: return parking.checkDeadline(delay: delay, lastHeardAt: lastHeardAt)
        case .unsupported, nil: return nil
        }
    }

    /// When the connection last received a packet or had output flushed.
    private var lastTrafficAt: NIODeadline {
        parking.lastTraffic(lastHeardAt: lastHeardAt)
    }

    /// Looks at the connection for parking again no sooner than one delay after `now`.
    func postponeParking(from now: NIODeadline) {
        parking.postpone(from: now, delay: core.parking?.delay)
    }

    /// Whether nothing is in progress on the connection or in its session.
    private var isQuiescent: Bool {
        guard hasNothingPending, let session, session.connection === self else { return false }
        return session.outbound.inflightCount == 0 && session.outbound.queuedCount == 0
    }

    /// The connection has been quiet for the parking delay: park it if nothing is in progress, or look again one
    /// delay later.
    func considerParking(now: NIODeadline) {
        guard let descriptor = socketDescriptor else { return }
        guard isQuiescent else {
            postponeParking(from: now)
            return
        }
        switch transport?.parkingSupport {
        case .immediate(let pipeline):
            guard let duplicate = Descriptor.duplicate(descriptor) else {
                postponeParking(from: now)
                return
            }
            park(on: duplicate)
            pipeline.context.close(promise: nil)  // NIO closes its descriptor; the duplicate keeps the socket open
        case .afterStoppingReads(let relayed):
            parking.requested(lastTraffic: lastTrafficAt)
            relayed.prepareToPark(descriptor: descriptor, handler: self)
        case .unsupported, nil:
            return
        }
    }

    /// A relayed socket stopped reading and duplicated its descriptor (nil: its channel had closed). Everything it
    /// read before has been received: park now if the connection is still quiet, or call it off.
    func parkPrepared(duplicate: CInt?) {
        let requestedAt = parking.requestAnswered()
        guard let relayed = transport as? RelayedChannel else {
            if let duplicate { Descriptor.close(duplicate) }
            return
        }
        guard let duplicate else { return }  // the channel closed: its inactive event is on its way
        guard isOpen, requestedAt == lastTrafficAt, isQuiescent else {
            Descriptor.close(duplicate)
            relayed.parkCalledOff()
            postponeParking(from: core.eventLoop.now)
            armTimer()
            return
        }
        relayed.handlerBox?.value = nil  // the closing channel's events no longer reach this connection
        park(on: duplicate)
        relayed.close()
    }

    /// Switches to the parked state on `duplicate` and has the watcher report it.
    private func park(on duplicate: CInt) {
        let generation = parking.parked()
        let parked = ParkedSocket(
            descriptor: duplicate, ticket: SocketWatcher.ticket(descriptor: duplicate, generation: generation),
            remoteAddress: transport?.remoteAddress, coreLoop: core.eventLoop)
        transport = parked
        socketDescriptor = duplicate
        guard core.parking?.parked(self, parked) == true else {
            unpark()  // the watcher refused it: straight back onto a channel
            return
        }
        armTimer()  // the keepalive still runs while parked
    }

    /// Brings a parked connection back onto a channel (the watcher saw the socket readable, or there is output).
    func unpark() {
        guard let parked = transport as? ParkedSocket, !parked.isUnparking else { return }
        parked.isUnparking = true
        guard let registry = core.parking else { return unparkFailed(parked) }
        registry.unpark(self, parked)
    }

    /// Output was flushed to a parked connection.
    func unparkForOutput() {
        guard isOpen else { return }  // closing: nothing more goes out
        unpark()
    }

    /// NIO could not take the socket back; it closed it.
    func unparkFailed(_ parked: ParkedSocket) {
        guard let current = transport as? ParkedSocket, current === parked else { return }  // closed meanwhile
        transport = nil
        close(.connectionLost)
        core.flushDirty()
        signalClosed()
    }

    /// The connection closes while parked: close the socket here, or, when NIO already has it back, once its
    /// channel arrives (``attach(_:)``).
    func closeParked(_ parked: ParkedSocket, writingPendingOutput: Bool = false) {
        guard !parked.isUnparking else {
            parked.closeWhenAttached = true
            return
        }
        core.parking?.release(parked)
        if writingPendingOutput {
            // A few bytes at most (an MQTT 5 DISCONNECT telling why): written if the socket takes them now, since
            // the socket is closed next and the connection never comes back onto a channel.
            for buffer in parked.pendingWrites {
                _ = buffer.withUnsafeReadableBytes { Descriptor.writeAvailable(parked.descriptor, $0) }
            }
            parked.pendingWrites = []
        }
        Descriptor.close(parked.descriptor)
        transport = nil
        signalClosed()
    }
}
