import CMosquitto
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One turn of the network thread's I/O: waits with `poll(2)` for the connection's socket (or a wake-up), then lets
/// libmosquitto read, write and do its housekeeping (`mosquitto_loop_read`, `mosquitto_loop_write`,
/// `mosquitto_loop_misc`), as libmosquitto's documentation describes for an external event loop.
///
/// Not `mosquitto_loop`: it waits with `select(2)`, which cannot watch a descriptor numbered 1024 or above
/// (`FD_SETSIZE`). In a process with many open files, such as a service embedding the client, the socket gets such a
/// number and `mosquitto_loop` returns at once without reading, so the thread spins and nothing arrives.
///
/// Other threads queue packets (`mosquitto_publish`, ...) and then call ``wake()``: in threaded mode libmosquitto
/// only queues them, and its own wake-up pipe is read by `mosquitto_loop` alone. A pipe of ours does that job here.
final class SocketPoller: Sendable {
    private let wakeRead: CInt
    private let wakeWrite: CInt
    /// A wake-up is in the pipe and not drained yet: a burst of publishes writes the pipe once, not once each.
    private let wakePending = Atomic<Bool>(false)

    init() throws(MQTTClientError) {
        var fds: [CInt] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw .invalidConfiguration("could not create the network thread's wake-up pipe (errno \(errno))")
        }
        for fd in fds {  // never blocks the thread that wakes, nor the drain; not inherited by child processes
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Ends the network thread's current wait, so that what another thread queued is written now. A full pipe
    /// already holds a wake-up, so a failed write loses nothing.
    func wake() {
        guard !wakePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Waits up to `timeoutMilliseconds` for the socket of `handle` (readable, or writable while libmosquitto has
    /// output) or a wake-up, then reads, writes and runs libmosquitto's housekeeping (keepalive). Returns
    /// libmosquitto's result; on a read or write error libmosquitto has closed the socket itself.
    ///
    /// `beforeBlocking`, when given, runs only if nothing is ready yet, just before the wait: the engine resumes
    /// there, in one batch, the callers whose acknowledgements it has read, once the socket has nothing more.
    func runOnce(_ handle: OpaquePointer, timeoutMilliseconds: CInt, beforeBlocking: (() -> Void)? = nil) -> CInt {
        let socket = mosquitto_socket(handle)
        guard socket >= 0 else { return MosquittoError.noConnection }
        let outputEvents = mosquitto_want_write(handle) ? Int16(POLLOUT) : 0
        var fds = [
            pollfd(fd: socket, events: Int16(POLLIN) | outputEvents, revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        var ready = poll(&fds, nfds_t(fds.count), beforeBlocking == nil ? timeoutMilliseconds : 0)
        if ready == 0, let beforeBlocking {
            beforeBlocking()
            ready = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        }
        if ready < 0 {
            return errno == EINTR ? MosquittoError.success : Int32(MOSQ_ERR_ERRNO.rawValue)
        }
        if fds[1].revents != 0 { drainWakeUps() }
        var rc = MosquittoError.success
        if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            rc = mosquitto_loop_read(handle, 1)
            if rc != MosquittoError.success || mosquitto_socket(handle) < 0 { return rc }
        }
        // Written when the socket said so, or when output may have been queued since the wait began: by a waker,
        // or by the read itself (a PUBACK releases the next queued message, a PUBREC queues the PUBREL). Writing
        // now rather than after another poll saves a system call per turn; a full socket buffer only makes
        // libmosquitto keep the rest for the next turn, which then waits for POLLOUT.
        if fds[0].revents & Int16(POLLOUT) != 0 || mosquitto_want_write(handle) {
            rc = mosquitto_loop_write(handle, 1)
            if rc != MosquittoError.success || mosquitto_socket(handle) < 0 { return rc }
        }
        return mosquitto_loop_misc(handle)
    }

    /// Empties the pipe, then lets the next ``wake()`` write again. What a waker queued before its skipped write is
    /// seen by the `mosquitto_want_write` check that follows (the flag orders the two).
    private func drainWakeUps() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
        _ = wakePending.exchange(false, ordering: .acquiringAndReleasing)
    }
}
