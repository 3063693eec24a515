#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// The files of one persistence directory and every blocking system call on them.
///
/// Used only from the persistence dispatch queue (one serial queue, never the broker's event loop), which is what
/// makes the mutable descriptors safe: `@unchecked Sendable` is justified by that confinement alone.
///
/// Files: `mqttchat.snapshot` (the state at the last compaction), `mqttchat.log` (records appended since), and
/// `mqttchat.lock` (held with `flock` while a broker uses the directory).
final class PersistenceWriter: @unchecked Sendable {
    let directory: String
    var snapshotPath: String { directory + "/mqttchat.snapshot" }
    var logPath: String { directory + "/mqttchat.log" }
    private var lockPath: String { directory + "/mqttchat.lock" }
    private var logFD: Int32 = -1
    private var lockFD: Int32 = -1
    /// Told how long each `fsync`/`fdatasync` took (the metrics' sync histogram); nil skips the clock reads.
    private let onSync: (@Sendable (Duration) -> Void)?

    init(directory: String, onSync: (@Sendable (Duration) -> Void)? = nil) {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.onSync = onSync
    }

    deinit {
        close()
    }

    /// Creates the directory if needed and takes its lock.
    func lock() throws(PersistenceError) {
        if mkdir(directory, 0o755) != 0, errno != EEXIST {
            throw .directoryUnavailable(path: directory, reason: "mkdir failed: errno \(errno)")
        }
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .directoryUnavailable(path: directory, reason: "cannot open lock file: errno \(errno)") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            _ = Glibc.close(fd)
            throw .directoryLocked(path: directory)
        }
        lockFD = fd
    }

    /// The whole content of `path`, or nil when it does not exist.
    func readFile(_ path: String) throws(PersistenceError) -> ByteBuffer? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw .io(path: path, operation: "open", errno: errno)
        }
        defer { _ = Glibc.close(fd) }
        var buffer = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", errno: errno)
            }
            if count == 0 { break }
            buffer.writeBytes(chunk[0..<count])
        }
        return buffer
    }

    /// Appends `bytes` to the log and makes them durable (one `fdatasync`). Empty batches skip both.
    func append(_ bytes: ByteBuffer) throws(PersistenceError) {
        guard bytes.readableBytes > 0 else { return }
        try writeAll(bytes, fd: logFD, path: logPath)
        guard timedSync({ fdatasync(logFD) }) == 0 else { throw .io(path: logPath, operation: "fdatasync", errno: errno) }
    }

    /// Replaces the snapshot with `snapshot` and starts an empty log of the same generation. Each file is written
    /// to a temporary name, synced, renamed over the old one, and the directory is synced, so a crash at any point
    /// leaves either the old pair or a new snapshot with a stale (older-generation, ignored) log.
    func compact(snapshot: ByteBuffer, generation: UInt64) throws(PersistenceError) {
        try replace(snapshotPath, with: snapshot)
        try replace(logPath, with: PersistenceFileFormat.header(kind: .log, generation: generation))
        if logFD >= 0 { _ = Glibc.close(logFD) }
        logFD = open(logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard logFD >= 0 else { throw .io(path: logPath, operation: "open", errno: errno) }
    }

    /// Renames a damaged file aside (`NAME.damaged-SECONDS`) so an operator can inspect it; returns the new path.
    func moveAside(_ path: String) throws(PersistenceError) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let target = "\(path).damaged-\(now.tv_sec)"
        guard rename(path, target) == 0 else { throw .io(path: path, operation: "rename", errno: errno) }
        try syncDirectory()
        return target
    }

    /// Closes the log and releases the lock.
    func close() {
        if logFD >= 0 {
            _ = Glibc.close(logFD)
            logFD = -1
        }
        if lockFD >= 0 {
            _ = flock(lockFD, LOCK_UN)
            _ = Glibc.close(lockFD)
            lockFD = -1
        }
    }

    private func replace(_ path: String, with bytes: ByteBuffer) throws(PersistenceError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: temporary, operation: "open", errno: errno) }
        do throws(PersistenceError) {
            try writeAll(bytes, fd: fd, path: temporary)
            guard timedSync({ fsync(fd) }) == 0 else {
                throw PersistenceError.io(path: temporary, operation: "fsync", errno: errno)
            }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        _ = Glibc.close(fd)
        guard rename(temporary, path) == 0 else { throw .io(path: path, operation: "rename", errno: errno) }
        try syncDirectory()
    }

    private func syncDirectory() throws(PersistenceError) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: directory, operation: "open", errno: errno) }
        defer { _ = Glibc.close(fd) }
        guard timedSync({ fsync(fd) }) == 0 else { throw .io(path: directory, operation: "fsync", errno: errno) }
    }

    /// Runs `sync` (an `fsync` or `fdatasync`; errno is left as it set it) and reports its duration to ``onSync``.
    private func timedSync(_ sync: () -> Int32) -> Int32 {
        guard let onSync else { return sync() }
        let clock = ContinuousClock()
        let started = clock.now
        let result = sync()
        let duration = clock.now - started
        let syncErrno = errno  // the caller reads it after a failure; the report must not change it
        onSync(duration)
        errno = syncErrno
        return result
    }

    private func writeAll(_ bytes: ByteBuffer, fd: Int32, path: String) throws(PersistenceError) {
        guard fd >= 0 else { throw .io(path: path, operation: "write (file not open)", errno: EBADF) }
        var failure: Int32 = 0
        bytes.withUnsafeReadableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure != 0 { throw .io(path: path, operation: "write", errno: failure) }
    }
}
