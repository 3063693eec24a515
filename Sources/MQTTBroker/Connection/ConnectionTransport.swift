import NIOCore

/// Where a ``BrokerConnectionHandler`` writes its bytes: straight into its own pipeline when the socket is on the
/// core's event loop, or through a ``RelayedChannel`` when the socket is served on another loop.
enum ConnectionTransport {
    /// The handler sits in the socket's pipeline, on the core's loop.
    case pipeline(ChannelHandlerContext)
    /// The socket lives on another loop; writes are batched and handed over once per flush.
    case relayed(RelayedChannel)

    /// Queues `buffer` for the socket without flushing.
    func write(_ buffer: ByteBuffer) {
        switch self {
        case .pipeline(let context): context.write(NIOAny(buffer), promise: nil)
        case .relayed(let relayed): relayed.write(buffer)
        }
    }

    /// Sends everything written so far.
    func flush() {
        switch self {
        case .pipeline(let context): context.flush()
        case .relayed(let relayed): relayed.flush()
        }
    }

    /// Flushes and closes the socket.
    func close() {
        switch self {
        case .pipeline(let context):
            context.flush()
            context.close(promise: nil)
        case .relayed(let relayed): relayed.close()
        }
    }
}

/// The core-loop side of a socket served on another event loop: collects the buffers written during one batch and
/// hands them to the socket's loop with a single `execute` per flush, so the per-message path crosses threads once
/// per batch and takes no lock of ours. Tasks from one loop to another run in order, so writes keep their order.
///
/// Confined to the core's event loop.
final class RelayedChannel {
    let channel: any Channel
    private var pending: [ByteBuffer] = []

    init(channel: any Channel) {
        self.channel = channel
    }

    func write(_ buffer: ByteBuffer) {
        pending.append(buffer)
    }

    func flush() {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let channel = self.channel
        channel.eventLoop.execute {
            for buffer in batch {
                channel.write(buffer, promise: nil)
            }
            channel.flush()
        }
    }

    /// Sends what is pending, then closes the socket (the close is queued behind the last batch).
    func close() {
        flush()
        let channel = self.channel
        channel.eventLoop.execute {
            channel.close(promise: nil)
        }
    }
}
