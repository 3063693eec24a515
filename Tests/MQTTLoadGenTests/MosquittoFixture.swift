import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real mosquitto on a free 127.0.0.1 port, with its config in a temp directory; always stopped by ``with(_:)``.
struct MosquittoFixture {
    /// Why the fixture could not start a broker.
    enum FixtureError: Error {
        /// No mosquitto binary was found.
        case mosquittoMissing
        /// mosquitto did not accept connections within the time limit.
        case notListening(port: Int)
        /// A free port could not be found.
        case noFreePort
    }

    let port: Int
    let pid: Int32

    /// Starts mosquitto, runs `body` with it, and stops it whatever `body` does.
    static func with<T>(_ body: (MosquittoFixture) async throws -> T) async throws -> T {
        guard let binary = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { throw FixtureError.mosquittoMissing }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("loadgen-mosquitto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var lastError: any Error = FixtureError.noFreePort
        for _ in 0..<3 {  // another process may grab the free port between probing and mosquitto binding it
            let port = try freePort()
            let config = directory.appendingPathComponent("mosquitto.conf")
            try """
            listener \(port) 127.0.0.1
            allow_anonymous true
            log_dest stdout
            max_inflight_messages 20
            max_queued_messages 100000
            set_tcp_nodelay true
            persistence false

            """.write(to: config, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["-c", config.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            guard await waitListening(port: port, process: process) else {
                await stop(process)
                lastError = FixtureError.notListening(port: port)
                continue
            }
            do {
                let result = try await body(MosquittoFixture(port: port, pid: process.processIdentifier))
                await stop(process)
                return result
            } catch {
                await stop(process)
                throw error
            }
        }
        throw lastError
    }

    /// Stops mosquitto. SIGKILL, not SIGTERM: a child spawned from the test process can inherit a signal mask
    /// that blocks SIGTERM, and then it would never exit. Waiting is bounded and never blocks a thread.
    private static func stop(_ process: Process) async {
        kill(process.processIdentifier, SIGKILL)
        for _ in 0..<100 where process.isRunning {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Binds 127.0.0.1:0, reads the port the kernel chose, and closes the socket.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError.noFreePort }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw FixtureError.noFreePort }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Polls for a TCP connect to succeed (bounded: 5 s), giving up early if mosquitto exits.
    private static func waitListening(port: Int, process: Process) async -> Bool {
        for _ in 0..<100 {
            if !process.isRunning { return false }
            if canConnect(port: port) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
