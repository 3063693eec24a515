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
}
