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
    /// whole process before it makes its first socket (no `send` with `MSG_NOSIGNAL` needed; the broker ignores it
    /// too when it serves sockets on its own epoll loop). A `write` is also
    /// what `/proc/PID/io` counts (`syscw`, not `send`), which the benchmarks read for system calls per message.
    @Sendable static func writeAvailable(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard bytes.baseAddress != nil else { return 0 }
        return max(write(descriptor, bytes), 0)
    }

    /// `write(2)` as it is: the bytes written, or -1 with `errno` set.
    static func write(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
        Glibc.write(descriptor, bytes.baseAddress, bytes.count)
        #elseif canImport(Musl)
        Musl.write(descriptor, bytes.baseAddress, bytes.count)
        #endif
    }
}
