import NIOCore

/// Writes a flush straight to a socket's descriptor while NIO holds nothing for that socket, skipping NIO's write and
/// flush through the pipeline (its bookkeeping and two writability events per flush). Lives on the socket's event
/// loop, with the socket's channel.
///
/// NIO must hold nothing, or the direct write would overtake its bytes. Two checks together say so:
/// - the channel is writable: the broker's sockets turn unwritable when NIO's queue goes above one byte and
///   writable again only when it is empty (``MQTTBrokerServer/writabilityMeansNothingQueued``);
/// - no leftover is pending: NIO's queue can hold exactly one byte and still count as writable, and the only way it
///   gets there is a direct write that left one byte to NIO (every MQTT packet is two bytes or more). So once a
///   direct write leaves anything, direct writes stop until NIO reports that leftover written
///   (``leftoverWritten()``).
///
/// The channel must also be active: NIO closes a channel's descriptor and marks it inactive in one step on the
/// channel's loop, calling no handler in between (`BaseSocketChannel.close0`), so on that loop an active channel's
/// descriptor is still its socket's, not a reused number.
struct DirectSocketWriter {
    /// What became of a flush offered to ``write(_:channel:using:)``.
    enum Outcome {
        /// The kernel took every byte.
        case written
        /// Nothing was tried: NIO may hold bytes for the socket, or the channel is closed. Hand the buffer to NIO.
        case declined
        /// The kernel took part of the buffer or none of it; the buffer keeps the rest. Hand it to NIO and call
        /// ``leftoverWritten()`` once NIO has written it (its write promise completes, failed or not).
        case leftover
    }

    /// The socket's descriptor, which NIO owns and closes.
    let descriptor: CInt
    /// A leftover was handed to NIO and is not yet written.
    private(set) var leftoverPending = false

    init(descriptor: CInt) {
        self.descriptor = descriptor
    }

    /// Writes `buffer` to the socket when NIO holds nothing for it. Call on the channel's event loop. `write` is
    /// the system call (``Descriptor/writeAvailable(_:_:)``); tests pass one that takes fewer bytes.
    mutating func write(
        _ buffer: inout ByteBuffer, channel: any Channel,
        using write: (CInt, UnsafeRawBufferPointer) -> Int = Descriptor.writeAvailable
    ) -> Outcome {
        guard !leftoverPending, channel.isWritable, channel.isActive else { return .declined }
        let written = buffer.withUnsafeReadableBytes { write(descriptor, $0) }
        if written == buffer.readableBytes { return .written }
        buffer.moveReaderIndex(forwardBy: written)
        leftoverPending = true
        return .leftover
    }

    /// NIO has written (or failed) the leftover: the next flush may go straight to the socket again.
    mutating func leftoverWritten() {
        leftoverPending = false
    }
}
