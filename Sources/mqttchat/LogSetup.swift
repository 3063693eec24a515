import Foundation
import Logging
import MQTTBroker

/// Bootstraps swift-log once for the process.
enum LogSetup {
    /// Sets up the logging backend and returns the broker's logger.
    static func bootstrap(level: Logger.Level, destination: BrokerSettings.LogDestination) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler
            switch destination {
            case .stdout: handler = StreamLogHandler.standardOutput(label: label)
            case .stderr: handler = StreamLogHandler.standardError(label: label)
            case .none: handler = SwiftLogNoOpLogHandler()
            }
            handler.logLevel = level
            return handler
        }
        return Logger(label: "mqttchat.broker")
    }
}
