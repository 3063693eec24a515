import ArgumentParser
import Foundation
import Logging
import MQTTBroker
import ServiceLifecycle

/// `mqttchat broker`: runs the native mini broker until SIGINT or SIGTERM.
struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker",
        abstract: "Run the mqttchat MQTT broker (mosquitto-style config file).",
        discussion: """
            Without a config file the broker listens on 127.0.0.1:1883 only, as mosquitto 2 does. \
            Exit codes: 0 stopped, 64 usage, 71 cannot listen, 74 persistence unrecoverable, \
            78 configuration file missing, unreadable or invalid.
            The shipped, commented example is broker-config/mqttchat.conf.
            """
    )

    @Option(name: [.short, .customLong("config")], help: "Configuration file in mosquitto syntax.")
    var configFile: String?

    @Option(name: .shortAndLong, help: "Listen on this port (127.0.0.1) instead of the configured listeners; 0 picks a free port.")
    var port: Int?

    @Flag(name: .shortAndLong, help: "Log at debug level.")
    var verbose = false

    func validate() throws {
        // Here rather than in run(), so ArgumentParser shows this subcommand's usage, not the top-level one.
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        var settings = BrokerSettings()
        if let configFile {
            do {
                settings = try BrokerConfigParser.load(path: configFile)
            } catch {
                Console.error("mqttchat broker: \(error)")
                throw CLIExitCode.configInvalid.exitCode
            }
            for warning in settings.warnings { Console.error("mqttchat broker: warning: \(warning)") }
        }
        if let port {
            settings.configuration.listeners = [.init(host: "127.0.0.1", port: port)]
        }
        if verbose {
            settings.logLevel = .debug
        }
        let logger: Logger
        do {
            logger = try LogSetup.bootstrap(level: settings.logLevel, destination: settings.logDestination)
        } catch {
            Console.error("mqttchat broker: \(error.message)")
            throw CLIExitCode.configInvalid.exitCode
        }

        let broker = MQTTBrokerServer(configuration: settings.configuration, logger: logger)
        let addresses: [String]
        do {
            addresses = try await broker.start().map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" }
        } catch let error as PersistenceError {
            // Recovery refused the persistence directory (damaged file, lock held, I/O error): say exactly why.
            Console.error("mqttchat broker: persistence: \(error)")
            await broker.shutdown()
            throw CLIExitCode.ioError.exitCode
        } catch {
            Console.error("mqttchat broker: cannot listen: \(error)")
            await broker.shutdown()
            throw CLIExitCode.listenFailed.exitCode
        }
        // A stable, parseable readiness line (scripts read the port from it when they pass -p 0).
        FileHandle.standardOutput.write(Data("mqttchat broker listening on \(addresses.joined(separator: " "))\n".utf8))

        let group = ServiceGroup(
            configuration: .init(
                services: [broker],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}
