import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn(3)`, for the live tests (mosquitto, mosquitto_passwd, the client
/// probe).
///
/// Not Foundation's `Process`: on Linux its `run()` emulates close-on-exec by adding one close action per
/// descriptor number up to the highest open one, and a test that holds a thousand descriptors open at the same
/// time (HighDescriptorTests) made a concurrent `run()` crash inside it (SIGSEGV in `memcpy`, seen in CI). Here
/// the child closes every inherited descriptor above 2 with one `closefrom` action, gets standard output and
/// error in a file, and starts with no blocked signals, so SIGTERM stops it even though the test runner's threads
/// block it.
public final class SpawnedProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The wait status, once reaped.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `path` with `arguments`; standard input is /dev/null, standard output and error are appended to
    /// `outputPath` (created if missing), or go to /dev/null.
    public init(_ path: String, _ arguments: [String], outputPath: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        if let closeFrom = Self.addCloseFrom {
            _ = closeFrom(&actions, 3)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let rc = (argv + [nil]).withUnsafeBufferPointer { argvPointer -> Int32 in
            guard let base = argvPointer.baseAddress else { return EINVAL }
            return posix_spawn(&pid, path, &actions, &attributes, base, environ)
        }
        guard rc == 0 else { throw HarnessError("posix_spawn \(path) failed: \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// export: looked up once; nil on a libc without it (then close-on-exec alone keeps descriptors in).
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, CInt) -> CInt)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, CInt) -> CInt).self)
    }()

    /// Whether the child has not exited yet (reaps it if it has).
    public var isRunning: Bool { poll() == nil }

    /// The exit status (or 128 + signal) once the child has exited; nil while it runs.
    public var terminationStatus: Int32? {
        guard let status = poll() else { return nil }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Sends `signal` to the child unless it was already reaped.
    public func send(_ signal: Int32) {
        guard reaped.withLock({ $0 }) == nil else { return }
        kill(pid, signal)
    }

    /// Waits (sleeping, not blocking the cooperative pool) until the child exits or `timeout` passes; then sends
    /// SIGKILL and waits for that. Returns the termination status.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(10)) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        if isRunning {
            send(SIGKILL)
            while isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return terminationStatus ?? -1
    }

    /// `waitpid(WNOHANG)`, once: the wait status after the child exited, else nil.
    private func poll() -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { reaped = status }
            return reaped
        }
    }

    deinit {
        // A test that forgot its child must not leave it running, nor a zombie behind.
        if reaped.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
    }
}
