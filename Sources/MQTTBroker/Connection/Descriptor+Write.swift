#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

extension Descriptor {
    /// Writes as much of `bytes` as the socket takes now. Returns the number of bytes written: 0 when the socket is
    /// full (`EAGAIN`), was interrupted or failed. The caller hands what is left to NIO, whose own write then waits
    /// for the socket or meets the same error and closes the channel: no error is handled here.
    ///
    /// `write(2)`, as NIO writes: the socket is NIO's, so it is non-blocking, and NIO ignores `SIGPIPE` for the
    /// whole process before it makes its first socket (no `send` with `MSG_NOSIGNAL` needed). A `write` is also
    /// what `/proc/PID/io` counts (`syscw`, not `send`), which the benchmarks read for system calls per message.
    @Sendable static func writeAvailable(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        return max(write(descriptor, base, bytes.count), 0)
    }
}
