import Foundation
import Logging
import MQTTBroker

/// Bootstraps swift-log once for the process.
enum LogSetup {
    /// Why the log destination could not be used.
    struct Failure: Error {
        let message: String
    }

    /// Sets up the logging backend and returns the broker's logger; a `log_dest file` that cannot be opened for
    /// appending fails here, before the broker starts (mosquitto exits too).
    static func bootstrap(level: Logger.Level, destination: BrokerSettings.LogDestination) throws(Failure) -> Logger {
        var opened: LogFile?
        if case .file(let path) = destination {
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
            guard descriptor >= 0 else {
                throw Failure(message: "cannot open log file \(path): \(String(cString: strerror(errno)))")
            }
            opened = LogFile(handle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
        }
        let file = opened  // a constant: the factory below may run on any thread
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler
            switch destination {
            case .stdout: handler = StreamLogHandler.standardOutput(label: label)
            case .stderr: handler = StreamLogHandler.standardError(label: label)
            case .none: handler = SwiftLogNoOpLogHandler()
            case .file:
                handler = file.map { StreamLogHandler(label: label, stream: $0) } ?? SwiftLogNoOpLogHandler()
            }
            handler.logLevel = level
            return handler
        }
        return Logger(label: "mqttchat.broker")
    }
}

/// An append-only log file as a swift-log output stream; each line is one `write(2)` (O_APPEND keeps lines whole).
private struct LogFile: TextOutputStream, @unchecked Sendable {
    // @unchecked: FileHandle writes are thread-safe system calls; the handle itself is never mutated.
    let handle: FileHandle

    mutating func write(_ string: String) {
        try? handle.write(contentsOf: Data(string.utf8))
    }
}
