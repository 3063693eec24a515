#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

extension Descriptor {
    /// Sends as much of `buffer`'s readable bytes as the socket takes now, without blocking and without `SIGPIPE`
    /// (`send(2)` with `MSG_DONTWAIT | MSG_NOSIGNAL`). Returns the number of bytes sent: 0 when the socket is full
    /// (`EAGAIN`), was interrupted or failed. The caller hands what is left to NIO, whose own write then waits for
    /// the socket or meets the same error and closes the channel: no error is handled here.
    static func sendAvailable(_ descriptor: CInt, _ buffer: ByteBuffer) -> Int {
        let sent = buffer.withUnsafeReadableBytes { bytes -> Int in
            guard let base = bytes.baseAddress else { return 0 }
            return send(descriptor, base, bytes.count, CInt(MSG_DONTWAIT) | CInt(MSG_NOSIGNAL))
        }
        return max(sent, 0)
    }

    /// Sends `buffer` straight to the socket of `channel` (whose descriptor is `descriptor`) when NIO's write queue
    /// for it is empty, skipping NIO's write and flush through the pipeline (about 4,700 instructions of
    /// bookkeeping and two writability events per flush, measured with callgrind one message at a time). Returns
    /// whether every byte was sent; otherwise `buffer` keeps the bytes left for NIO to write, ahead of everything
    /// after them (later flushes find the channel unwritable, so they go through NIO too). Call on the channel's
    /// event loop.
    ///
    /// Writable means NIO's queue is empty: the broker's sockets are unwritable from their first queued byte
    /// (``MQTTBrokerServer/writabilityMeansNothingQueued``). Active means NIO has not closed the descriptor, which it
    /// stops being before NIO closes it, so the descriptor cannot belong to another socket yet.
    static func sendIfNothingQueued(_ buffer: inout ByteBuffer, descriptor: CInt?, channel: any Channel) -> Bool {
        guard let descriptor, channel.isWritable, channel.isActive else { return false }
        let sent = sendAvailable(descriptor, buffer)
        if sent == buffer.readableBytes { return true }
        buffer.moveReaderIndex(forwardBy: sent)
        return false
    }
}
