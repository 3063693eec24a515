import Foundation
import Logging
import MQTTBroker
import MQTTClient

#if canImport(Glibc)
    import Glibc
#endif

/// Which broker a client test runs against: every live test runs once per kind.
enum TestBrokerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A real mosquitto process started by the test.
    case mosquitto
    /// Our own broker (`MQTTBrokerServer`), started in-process by the test.
    case mqttchat

    var description: String { rawValue }

    /// The CONNACK refusal a wrong password gets. MQTT 3.1.1 section 3.2.2.3 defines 4 "bad user name or
    /// password" for exactly this, and our broker sends it; mosquitto 2.0.11 answers 5 "not authorized" instead.
    var wrongPasswordRefusal: MQTTClientError {
        switch self {
        case .mosquitto: .notAuthorized
        case .mqttchat: .badUsernameOrPassword
        }
    }
}

/// Errors of the test harness itself.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Broker features a test needs.
struct BrokerOptions: Sendable {
    /// `username → password`; when set, anonymous clients are refused.
    var users: [String: String] = [:]
    /// Serve TLS with these files instead of plain TCP (mosquitto and ours alike).
    var tls: TLSFiles?
    /// With `tls`: clients must present a certificate signed by the test CA (`require_certificate true`).
    var requireCertificate = false
}

/// A running broker on 127.0.0.1; `stop()` it at the end of the test.
final class RunningBroker: @unchecked Sendable {
    // @unchecked: `process` and `server` are only touched by the test task that owns the broker (start, stop,
    // restart in sequence).
    let kind: TestBrokerKind
    let port: Int
    let directory: URL
    private let configFile: URL
    private let brokerConfiguration: BrokerConfiguration
    private var process: Process?
    private var server: MQTTBrokerServer?

    fileprivate init(kind: TestBrokerKind, port: Int, directory: URL, configFile: URL) {
        self.kind = kind
        self.port = port
        self.directory = directory
        self.configFile = configFile
        self.brokerConfiguration = BrokerConfiguration()
    }

    fileprivate init(server: MQTTBrokerServer, port: Int, configuration: BrokerConfiguration, directory: URL) {
        self.kind = .mqttchat
        self.port = port
        self.directory = directory
        self.configFile = directory.appendingPathComponent("unused.conf")
        self.brokerConfiguration = configuration
        self.server = server
    }

    fileprivate func launch() async throws {
        switch kind {
        case .mosquitto: try await launchMosquitto()
        case .mqttchat: try await launchOurs()
        }
    }

    private func launchMosquitto() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", configFile.path]
        let log = directory.appendingPathComponent("mosquitto.log")
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        self.process = process
        try await waitUntilListening()
    }

    /// Binds a new in-process broker to the same port; retries for up to 5 s while the old socket lingers.
    private func launchOurs() async throws {
        var configuration = brokerConfiguration
        configuration.listeners = [.init(host: "127.0.0.1", port: port, tls: brokerConfiguration.listeners.first?.tls)]
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let server = MQTTBrokerServer(configuration: configuration, logger: quietBrokerLogger)
            do {
                try await server.start()
                self.server = server
                return
            } catch {
                await server.shutdown()
                guard ContinuousClock.now < deadline else {
                    throw HarnessError("our broker could not bind 127.0.0.1:\(port) again: \(error)")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Stops the broker and waits until it is gone: ours closes its listener and every connection (without
    /// publishing wills); mosquitto gets SIGKILL.
    ///
    /// SIGKILL, not SIGTERM: mosquitto started from the test runner inherits a signal mask that blocks SIGTERM,
    /// so a polite stop always ran into its 5 s fallback (5 s added to every mosquitto test). The broker runs
    /// without persistence, so nothing is lost, and clients see the TCP connection close either way.
    func stop() async {
        if let server {
            self.server = nil
            await server.shutdown()
        }
        guard let process else { return }
        self.process = nil
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? await offPool { process.waitUntilExit() }
    }

    /// Starts the broker again on the same port with the same configuration.
    func restart() async throws {
        await stop()
        try await launch()
    }

    /// Stops the broker and removes its directory.
    func shutdown() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The broker's log so far (for failure messages; ours logs through swift-log, not to this file).
    var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? ""
    }

    private func waitUntilListening() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if canConnect(port: port) { return }
            if let process, !process.isRunning {
                throw HarnessError("broker exited with \(process.terminationStatus): \(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HarnessError("broker did not listen on \(port) within 10 s: \(log)")
    }
}

/// Accepts exactly the configured `username → password` pairs.
private struct PasswordTable: MQTTBrokerAuthenticator {
    let users: [String: String]

    func authenticate(username: String, password: [UInt8]?, clientIdentifier: String) -> Bool {
        guard let expected = users[username], let password else { return false }
        return Array(expected.utf8) == password
    }
}

/// Starts a broker of `kind` on a free port of 127.0.0.1.
func startBroker(kind: TestBrokerKind, options: BrokerOptions = BrokerOptions()) async throws -> RunningBroker {
    switch kind {
    case .mosquitto:
        let directory = try makeTemporaryDirectory(prefix: "mqttclient-mosquitto")
        let port = try freePort()
        var config = [
            "listener \(port) 127.0.0.1",
            "log_dest stdout",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "persistence false",
            "user root",
        ]
        if options.users.isEmpty {
            config.append("allow_anonymous true")
        } else {
            let passwordFile = directory.appendingPathComponent("passwd")
            var create = true
            for (user, password) in options.users.sorted(by: { $0.key < $1.key }) {
                try await run("/usr/bin/mosquitto_passwd", ["-b"] + (create ? ["-c"] : []) + [passwordFile.path, user, password])
                create = false
            }
            config += ["allow_anonymous false", "password_file \(passwordFile.path)"]
        }
        if let tls = options.tls {
            config += ["cafile \(tls.caCertificate.path)", "certfile \(tls.serverCertificate.path)",
                       "keyfile \(tls.serverKey.path)"]
            if options.requireCertificate {
                config.append("require_certificate true")
            }
        }
        let configFile = directory.appendingPathComponent("mosquitto.conf")
        try (config.joined(separator: "\n") + "\n").write(to: configFile, atomically: true, encoding: .utf8)
        let broker = RunningBroker(kind: kind, port: port, directory: directory, configFile: configFile)
        try await broker.launch()
        return broker
    case .mqttchat:
        var configuration = BrokerConfiguration()
        let tls = options.tls.map {
            BrokerTLSConfiguration(
                certificateFile: $0.serverCertificate.path, privateKeyFile: $0.serverKey.path,
                caFile: $0.caCertificate.path, requireCertificate: options.requireCertificate)
        }
        configuration.listeners = [.init(host: "127.0.0.1", port: 0, tls: tls)]
        if !options.users.isEmpty {
            configuration.allowAnonymous = false
            configuration.authenticator = PasswordTable(users: options.users)
        }
        let server = MQTTBrokerServer(configuration: configuration, logger: quietBrokerLogger)
        let addresses = try await server.start()
        guard let port = addresses.first?.port else {
            await server.shutdown()
            throw HarnessError("our broker reported no bound port: \(addresses)")
        }
        let directory = try makeTemporaryDirectory(prefix: "mqttclient-ours")
        return RunningBroker(server: server, port: port, configuration: configuration, directory: directory)
    }
}

/// Runs `body` with a fresh broker and always shuts it down afterwards.
func withBroker<T>(
    _ kind: TestBrokerKind, options: BrokerOptions = BrokerOptions(),
    _ body: (RunningBroker) async throws -> T
) async throws -> T {
    let broker = try await startBroker(kind: kind, options: options)
    do {
        let result = try await body(broker)
        await broker.shutdown()
        return result
    } catch {
        await broker.shutdown()
        throw error
    }
}

// MARK: Helpers

func makeTemporaryDirectory(prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A port that was free a moment ago (bind to port 0, read it, close).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw HarnessError("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw HarnessError("getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    return result == 0
}

/// Runs a command to completion (off the cooperative pool); throws on a non-zero exit.
@discardableResult
func run(_ executable: String, _ arguments: [String]) async throws -> String {
    try await offPool { try runBlocking(executable, arguments) }
}

/// Runs blocking work on a thread of its own, so the (2-thread) cooperative pool keeps serving the other tests.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
        }
        thread.start()
    }
}

private func runBlocking(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: output, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw HarnessError("\(executable) \(arguments.joined(separator: " ")) failed: \(text)")
    }
    return text
}

/// Our broker logs every connect at info level; tests only want to see its warnings and errors.
let quietBrokerLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.test")
    logger.logLevel = .warning
    return logger
}()
