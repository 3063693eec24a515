import NIOCore

/// A parked connection's socket, and what was written to the connection since it was parked.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class ParkedSocket: ConnectionTransport {
    /// The socket, owned here until it is handed back to NIO.
    let descriptor: CInt
    /// The ticket the watcher reports the socket with.
    let ticket: SocketWatcher.Ticket
    /// Buffers written while parked, in order; written to the channel the connection gets back.
    @exclusivity(unchecked) var pendingWrites: [ByteBuffer] = []
    /// The flushed bytes among them, reported written once the new channel has written them.
    @exclusivity(unchecked) var pendingReportedBytes = 0
    /// The client's address, kept from the channel for the logs (a parked connection still logs where it is).
    let remoteAddress: SocketAddress?
    /// The socket was handed to NIO; the channel is on its way.
    @exclusivity(unchecked) var isUnparking = false
    /// The connection was closed while its channel was on its way: close the channel when it arrives.
    @exclusivity(unchecked) var closeWhenAttached = false

    /// The core's loop, which watches the socket while it is parked.
    let socketEventLoop: any EventLoop

    init(descriptor: CInt, ticket: SocketWatcher.Ticket, remoteAddress: SocketAddress?, coreLoop: any EventLoop) {
        self.socketEventLoop = coreLoop
        self.descriptor = descriptor
        self.ticket = ticket
        self.remoteAddress = remoteAddress
    }

    /// Kept until the connection is back on a channel.
    func write(_ buffer: ByteBuffer, ownBuffer: Bool) {
        pendingWrites.append(buffer)
    }

    /// Output brings the connection back onto a channel, which then writes it.
    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        pendingReportedBytes += bytes
        handler.unparkForOutput()
    }

    /// Closed by its connection (``ConnectionParking/closeParked(_:)``), which knows the watcher.
    func close() {}

    /// Applied when the connection is back on a channel.
    func setReadingPausedByCore(_ paused: Bool) {}

    var parkingSupport: ParkingSupport { .unsupported }
}
