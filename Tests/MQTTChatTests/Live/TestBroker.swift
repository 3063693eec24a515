import Foundation
import Logging
import MQTTBroker

#if canImport(Glibc)
    import Glibc
#endif

/// Errors of the test harness.
enum HarnessError: Error, CustomStringConvertible {
    /// mosquitto is not installed where expected.
    case mosquittoMissing
    /// The broker did not accept connections in time; its output is attached.
    case brokerDidNotStart(output: String)
    /// A socket call failed.
    case socket(String)
    /// Something did not happen in time.
    case timeout(String)

    var description: String {
        switch self {
        case .mosquittoMissing: "mosquitto not found in /usr/sbin or /usr/bin"
        case .brokerDidNotStart(let output): "broker did not start: \(output)"
        case .socket(let call): "socket call failed: \(call) errno \(errno)"
        case .timeout(let what): "timed out waiting for \(what)"
        }
    }
}

/// Which broker a live chat test runs against: every live test runs once per kind (the same shape as
/// MQTTClientTests' harness).
enum TestBrokerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A real mosquitto process started by the test.
    case mosquitto
    /// Our own broker (`MQTTBrokerServer`), started in-process by the test.
    case mqttchat

    var description: String { rawValue }
}

/// A broker on 127.0.0.1 started by one test; `stop()` ends it.
protocol RunningBroker: Sendable {
    /// The TCP port it listens on.
    var port: Int { get }
    /// Stops the broker and releases everything it holds; idempotent.
    func stop() async
}

/// Starts a broker of `kind` on a free port of 127.0.0.1.
func startBroker(kind: TestBrokerKind) async throws -> any RunningBroker {
    switch kind {
    case .mosquitto: try MosquittoBroker.start()
    case .mqttchat: try await OurBroker.start()
    }
}

/// Runs `body` with a fresh broker of `kind` and always stops it afterwards.
func withBroker<T>(_ kind: TestBrokerKind, _ body: (any RunningBroker) async throws -> T) async throws -> T {
    let broker = try await startBroker(kind: kind)
    do {
        let result = try await body(broker)
        await broker.stop()
        return result
    } catch {
        await broker.stop()
        throw error
    }
}

/// Our broker, in-process, on an ephemeral port of 127.0.0.1.
struct OurBroker: RunningBroker {
    let port: Int
    private let server: MQTTBrokerServer

    static func start() async throws -> OurBroker {
        var configuration = BrokerConfiguration()
        configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
        let server = MQTTBrokerServer(configuration: configuration, logger: quietBrokerLogger)
        let addresses = try await server.start()
        guard let port = addresses.first?.port else {
            await server.shutdown()
            throw HarnessError.brokerDidNotStart(output: "our broker reported no bound port: \(addresses)")
        }
        return OurBroker(port: port, server: server)
    }

    /// Closes the listener and every connection (without publishing wills).
    func stop() async { await server.shutdown() }
}

/// A real mosquitto broker on a free 127.0.0.1 port, configured from a temp dir; `stop()` ends it.
final class MosquittoBroker: RunningBroker, @unchecked Sendable {
    let port: Int
    private let process: Process
    private let directory: URL

    /// Starts mosquitto; retries with another port if the chosen one was taken meanwhile.
    static func start() throws -> MosquittoBroker {
        var lastError: any Error = HarnessError.mosquittoMissing
        for _ in 0..<3 {
            do { return try MosquittoBroker() } catch { lastError = error }
        }
        throw lastError
    }

    private init() throws {
        guard let binary = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first(where: FileManager.default.isExecutableFile)
        else { throw HarnessError.mosquittoMissing }
        port = try freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqttchat-mosquitto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("mosquitto.conf")
        try """
        listener \(port) 127.0.0.1
        allow_anonymous true
        persistence false
        log_dest stdout
        log_type error
        log_type warning

        """.write(to: config, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-c", config.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if !process.isRunning { break }
            if canConnect(port: port) { return }
            usleep(20_000)
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        try? FileManager.default.removeItem(at: directory)
        throw HarnessError.brokerDidNotStart(output: text)
    }

    /// Stops mosquitto and removes its temp dir.
    ///
    /// SIGKILL, not `terminate()`: a child spawned from the test runner can inherit a signal mask that
    /// blocks SIGTERM, and mosquitto restores that mask around its wait, so SIGTERM is never handled
    /// (seen here: `waitUntilExit()` after `terminate()` hung forever). Nothing of the broker's state matters.
    func stop() async { stopNow() }

    private func stopNow() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stopNow() }
}

/// A port that was free a moment ago (bind to port 0, read it, close).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError.socket("socket") }
    defer { close(fd) }
    var address = loopback(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw HarnessError.socket("bind") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw HarnessError.socket("getsockname") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func canConnect(port: Int) -> Bool {
    guard let fd = try? connectedSocket(port: port) else { return false }
    close(fd)
    return true
}

/// A socket connected to 127.0.0.1:`port`.
func connectedSocket(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError.socket("socket") }
    var address = loopback(port: port)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        close(fd)
        throw HarnessError.socket("connect")
    }
    return fd
}

func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// Our broker logs every connect at info level; tests only want to see its warnings and errors.
let quietBrokerLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.test")
    logger.logLevel = .warning
    return logger
}()
