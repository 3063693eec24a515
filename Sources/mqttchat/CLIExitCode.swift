import ArgumentParser

/// The exit codes of every `mqttchat` command (sysexits.h values, plus mosquitto_sub's 27 for `-W`).
enum CLIExitCode: Int32, Sendable {
    /// Everything went as asked.
    case success = 0
    /// `subscribe -W` ran out of time before `-C` messages arrived (like mosquitto_sub).
    case timeout = 27
    /// The command line is wrong (EX_USAGE; ArgumentParser uses the same code for its own errors).
    case usage = 64
    /// A topic, room or user name is not valid, or input data is malformed (EX_DATAERR).
    case dataError = 65
    /// An input file does not exist or cannot be read (EX_NOINPUT).
    case noInput = 66
    /// The broker could not be reached or did not answer (EX_UNAVAILABLE).
    case unavailable = 69
    /// The broker could not bind a listener (EX_OSERR).
    case listenFailed = 71
    /// The local history database could not be opened, read or written, or the broker's persistence directory
    /// could not be recovered (EX_IOERR).
    case ioError = 74
    /// The broker refused the credentials or the client is not authorised (EX_NOPERM).
    case noPermission = 77
    /// The broker configuration file is missing or invalid (EX_CONFIG).
    case configInvalid = 78

    /// The `ExitCode` that ends the process with this code.
    var exitCode: ExitCode { ExitCode(rawValue) }
}

/// A failure that ends a command: a message for stderr and the exit code.
struct CLIFailure: Error, Sendable {
    /// What went wrong, for a human.
    let message: String
    /// How the process exits.
    let code: CLIExitCode

    /// Creates a failure.
    init(_ code: CLIExitCode, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension CLIFailure {
    /// Runs `body`; a ``CLIFailure`` is printed to stderr as `mqttchat <command>: <message>` and turned into its
    /// exit code, so every command reports errors the same way.
    static func reporting(_ command: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as CLIFailure {
            Console.error("mqttchat \(command): \(failure.message)")
            throw failure.code.exitCode
        }
    }
}
