import NIOCore

/// Where a ``BrokerConnectionHandler`` writes its bytes, and how it reaches its socket: a SwiftNIO pipeline on the
/// core's loop (``PipelineChannel``), a socket served on another loop (``RelayedChannel``), a socket on the core's
/// own epoll loop (``EpollSocketTransport``), or a parked socket watched by the broker (``ParkedSocket``). A new
/// kind of socket (WebSocket, say) joins by conforming; the connection never switches over the kinds.
///
/// The buffers of one batch are written at flush time, the last one with a promise, so the socket's loop can report
/// once per batch how many bytes left memory (the pending-output bound, ``PendingOutputGate``). Every conforming
/// type is confined to the core's event loop.
protocol ConnectionTransport: AnyObject {
    /// The client's address, for the logs.
    var remoteAddress: SocketAddress? { get }

    /// The event loop the socket is served on.
    var socketEventLoop: any EventLoop { get }

    /// Queues `buffer` for the socket without flushing. An `ownBuffer` (the handler's coalescing buffer, shared
    /// with nothing) may be reused once written.
    func write(_ buffer: ByteBuffer, ownBuffer: Bool)

    /// Sends everything written so far (`bytes` in all); `handler.outputWritten(bytes)` runs on the core's loop
    /// once the socket has written the batch, or failed to.
    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler)

    /// Closes the socket after what was flushed.
    func close()

    /// Closes the socket's sending side after what was flushed, and the socket itself once the client closes its
    /// side or `linger` has passed, reading and dropping what arrives meanwhile. For a connection ended with an MQTT 5
    /// DISCONNECT: closing at once, with the client's packets still arriving, resets the connection, and the reset
    /// can destroy the DISCONNECT (and its reason code) before the client reads it.
    func close(lingering linger: TimeAmount)

    /// Stops (or restarts) reading from the socket on behalf of the core (publisher back-pressure).
    func setReadingPausedByCore(_ paused: Bool)

    /// How this transport can give up its socket so that an idle connection parks (``ConnectionParking``).
    var parkingSupport: ParkingSupport { get }
}

extension ConnectionTransport {
    func write(_ buffer: ByteBuffer) {
        write(buffer, ownBuffer: false)
    }

    /// A transport that cannot half-close closes at once.
    func close(lingering linger: TimeAmount) {
        close()
    }
}

/// How a transport lets an idle connection park.
enum ParkingSupport {
    /// It cannot: the socket has no channel to give up (epoll), it is TLS, or it is parked already.
    case unsupported
    /// The socket is on the core's loop: duplicate its descriptor, park, then close the channel.
    case immediate(PipelineChannel)
    /// The socket is on another loop, which must first stop reading and report every byte it read.
    case afterStoppingReads(RelayedChannel)
}
