#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

extension Descriptor {
    /// Writes as much of `buffer`'s readable bytes as the socket takes now. Returns the number of bytes written: 0
    /// when the socket is full (`EAGAIN`), was interrupted or failed. The caller hands what is left to NIO, whose
    /// own write then waits for the socket or meets the same error and closes the channel: no error is handled
    /// here.
    ///
    /// `write(2)`, as NIO writes: the socket is NIO's, so it is non-blocking, and NIO ignores `SIGPIPE` for the
    /// whole process before it makes its first socket (no `send` with `MSG_NOSIGNAL` needed). A `write` is also
    /// what `/proc/PID/io` counts (`syscw`, not `send`), which the benchmarks read for system calls per message.
    static func writeAvailable(_ descriptor: CInt, _ buffer: ByteBuffer) -> Int {
        let written = buffer.withUnsafeReadableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            return write(descriptor, base, bytes.count)
        }
        return max(written, 0)
    }

    /// Writes `buffer` straight to the socket of `channel` (whose descriptor is `descriptor`) when NIO's write queue
    /// for it is empty, skipping NIO's write and flush through the pipeline (about 4,700 instructions of
    /// bookkeeping and two writability events per flush, measured with callgrind one message at a time). Returns
    /// whether every byte was written; otherwise `buffer` keeps the bytes left for NIO to write, ahead of everything
    /// after them (later flushes find the channel unwritable, so they go through NIO too). Call on the channel's
    /// event loop.
    ///
    /// Writable means NIO's queue is empty: the broker's sockets are unwritable from their first queued byte
    /// (``MQTTBrokerServer/writabilityMeansNothingQueued``). Active: NIO closes a channel's descriptor and marks it
    /// inactive in one step on the channel's loop, calling no handler in between (`BaseSocketChannel.close0`), so on
    /// that loop an active channel's descriptor is still its socket's, not a reused number.
    static func writeIfNothingQueued(_ buffer: inout ByteBuffer, descriptor: CInt?, channel: any Channel) -> Bool {
        guard let descriptor, channel.isWritable, channel.isActive else { return false }
        let written = writeAvailable(descriptor, buffer)
        if written == buffer.readableBytes { return true }
        buffer.moveReaderIndex(forwardBy: written)
        return false
    }
}
