public import Logging

/// Everything a configuration file sets: the broker's own configuration plus how the
/// process that runs it should log.
public struct BrokerSettings: Sendable {
    /// Where log lines go.
    public enum LogDestination: Sendable, Hashable {
        /// Standard output.
        case stdout
        /// Standard error (the default).
        case stderr
        /// Logging disabled.
        case none
        /// Appended to this file (`log_dest file PATH`).
        case file(path: String)
    }

    /// The broker's configuration.
    public var configuration: BrokerConfiguration
    /// Minimum level that is logged.
    public var logLevel: Logger.Level
    /// Where log lines go.
    public var logDestination: LogDestination
    /// One line per accepted-but-ignored mosquitto option (`FILE:LINE: ignoring mosquitto option 'NAME': why`),
    /// for the process to print at startup.
    public var warnings: [String] = []

    /// Settings with every default: one listener on 127.0.0.1:1883, info logging to stderr.
    public init(
        configuration: BrokerConfiguration = BrokerConfiguration(),
        logLevel: Logger.Level = .info,
        logDestination: LogDestination = .stderr
    ) {
        self.configuration = configuration
        self.logLevel = logLevel
        self.logDestination = logDestination
    }
}
