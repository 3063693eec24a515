import Foundation
import Logging
import MQTTBroker

#if canImport(Glibc)
    import Glibc
#endif

/// Which broker a live test runs against: every live test runs once per kind.
public enum TestBrokerKind: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A real mosquitto process started by the test.
    case mosquitto
    /// Our own broker (`MQTTBrokerServer`), started in-process by the test.
    case mqttchat

    public var description: String { rawValue }
}

/// Broker features a test needs.
public struct BrokerOptions: Sendable {
    /// `username → password`; when set, anonymous clients are refused.
    public var users: [String: String] = [:]
    /// Serve TLS with these files instead of plain TCP (mosquitto and ours alike).
    public var tls: TLSFiles?
    /// With `tls`: clients must present a certificate signed by the test CA (`require_certificate true`).
    public var requireCertificate = false
    /// Extra lines for mosquitto's configuration file (ignored by our broker).
    public var mosquittoLines: [String] = []
    /// Extra lines for our broker, in the same (mosquitto) syntax, read by its own configuration parser; its
    /// listeners stay the test's loopback one.
    public var mqttchatLines: [String] = []

    public init(
        users: [String: String] = [:], tls: TLSFiles? = nil, requireCertificate: Bool = false,
        mosquittoLines: [String] = [], mqttchatLines: [String] = []
    ) {
        self.users = users
        self.tls = tls
        self.requireCertificate = requireCertificate
        self.mosquittoLines = mosquittoLines
        self.mqttchatLines = mqttchatLines
    }

    /// The same `lines` for both brokers.
    public init(lines: [String]) {
        self.init(mosquittoLines: lines, mqttchatLines: lines)
    }
}

/// A running broker on 127.0.0.1; `stop()` or `shutdown()` it at the end of the test (``withBroker(_:options:_:)``
/// does).
public final class RunningBroker: @unchecked Sendable {
    // @unchecked: `process` and `server` are only touched by the test task that owns the broker (start, stop,
    // restart in sequence).
    public let kind: TestBrokerKind
    public let port: Int
    /// The broker's temp directory (mosquitto's configuration and log).
    public let directory: URL
    private let configFile: URL
    private let brokerConfiguration: BrokerConfiguration
    private var process: SpawnedProcess?
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

    /// The mosquitto process's id (nil for our in-process broker, or once stopped).
    public var processIdentifier: Int32? { process?.pid }

    fileprivate func launch() async throws {
        switch kind {
        case .mosquitto: try await launchMosquitto()
        case .mqttchat: try await launchOurs()
        }
    }

    private func launchMosquitto() async throws {
        guard let binary = mosquittoBinary else { throw HarnessError("mosquitto not found in /usr/sbin or /usr/bin") }
        let log = directory.appendingPathComponent("mosquitto.log")
        self.process = try SpawnedProcess(binary, ["-c", configFile.path], outputPath: log.path)
        try await waitUntilListening()
    }

    /// Binds a new in-process broker to the same port; retries for up to 5 s while the old socket lingers.
    private func launchOurs() async throws {
        var configuration = brokerConfiguration
        configuration.listeners = [.init(host: "127.0.0.1", port: port, tls: brokerConfiguration.listeners.first?.tls)]
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                self.server = try await startInProcessBroker(configuration).server
                return
            } catch {
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
    /// SIGKILL: the broker runs without persistence, so nothing is lost, clients see the TCP connection close
    /// either way, and no test waits for mosquitto's orderly shutdown.
    public func stop() async {
        if let server {
            self.server = nil
            await server.shutdown()
        }
        guard let process else { return }
        self.process = nil
        process.send(SIGKILL)
        await process.waitForExit()
    }

    /// Starts the broker again on the same port with the same configuration.
    public func restart() async throws {
        await stop()
        try await launch()
    }

    /// Stops the broker and removes its directory.
    public func shutdown() async {
        await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The broker's log so far (for failure messages; ours logs through swift-log, not to this file).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? ""
    }

    /// Waits until mosquitto listens on its port: until the listening socket there is its own, not another test's
    /// broker's that took the port between the probe and mosquitto's bind (mosquitto then exits, and the caller
    /// tries a new port). A listening socket accepts connections into its backlog, so no probe connection is needed.
    private func waitUntilListening() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let process, listener(port: port, isHeldBy: process.pid) { return }
            if let process, let status = process.terminationStatus {
                throw HarnessError("broker exited with \(status): \(log)")
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
public func startBroker(kind: TestBrokerKind, options: BrokerOptions = BrokerOptions()) async throws -> RunningBroker {
    switch kind {
    case .mosquitto:
        // Another process may take the free port between probing and mosquitto binding it: three attempts.
        var lastError: any Error = HarnessError("mosquitto did not start")
        for _ in 0..<3 {
            let directory = try makeTemporaryDirectory(prefix: "mqttchat-mosquitto")
            do {
                let broker = try await startMosquitto(in: directory, options: options)
                return broker
            } catch {
                try? FileManager.default.removeItem(at: directory)
                lastError = error
            }
        }
        throw lastError
    case .mqttchat:
        var base = BrokerConfiguration()
        if !options.mqttchatLines.isEmpty {
            base = try BrokerConfigParser.parse(options.mqttchatLines.joined(separator: "\n"), source: "test").configuration
        }
        let configuration = loopbackBrokerConfiguration(base: base) { configuration in
            configuration.listeners[0].tls = options.tls.map {
                BrokerTLSConfiguration(
                    certificateFile: $0.serverCertificate.path, privateKeyFile: $0.serverKey.path,
                    caFile: $0.caCertificate.path, requireCertificate: options.requireCertificate)
            }
            if !options.users.isEmpty {
                configuration.allowAnonymous = false
                configuration.authenticator = PasswordTable(users: options.users)
            }
        }
        let (server, addresses) = try await startInProcessBroker(configuration)
        guard let port = addresses.first?.port else {
            await server.shutdown()
            throw HarnessError("our broker reported no bound port: \(addresses)")
        }
        let directory = try makeTemporaryDirectory(prefix: "mqttchat-ours")
        return RunningBroker(server: server, port: port, configuration: configuration, directory: directory)
    }
}

private func startMosquitto(in directory: URL, options: BrokerOptions) async throws -> RunningBroker {
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
    config += options.mosquittoLines
    let configFile = directory.appendingPathComponent("mosquitto.conf")
    try (config.joined(separator: "\n") + "\n").write(to: configFile, atomically: true, encoding: .utf8)
    let broker = RunningBroker(kind: .mosquitto, port: port, directory: directory, configFile: configFile)
    do {
        try await broker.launch()
    } catch {
        await broker.stop()
        throw error
    }
    return broker
}

/// Runs `body` with a fresh broker and always shuts it down afterwards.
public func withBroker<T>(
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

/// Our broker logs every connect at info level; tests only want to see its warnings and errors.
public let quietBrokerLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.test")
    logger.logLevel = .warning
    return logger
}()
