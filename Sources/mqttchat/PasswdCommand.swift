import ArgumentParser
import Foundation
import MQTTBroker

#if canImport(Glibc)
import Glibc
#endif

/// `mqttchat passwd`: creates and updates password files for `password_file`, in the same format as
/// mosquitto 2.0's `mosquitto_passwd` (PBKDF2-HMAC-SHA512, 101 iterations, 12-byte random salt), so either
/// broker accepts a file made by either tool.
struct PasswdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Create or update a broker password file (mosquitto_passwd format).",
        discussion: """
            mqttchat passwd -c FILE USER        create FILE (overwriting it) with USER, asking for the password
            mqttchat passwd FILE USER           add USER to FILE or change its password
            mqttchat passwd -b FILE USER PASS   take the password from the command line (visible to other users!)
            mqttchat passwd -D FILE USER        remove USER from FILE
            New files are created readable by their owner only.
            """
    )

    @Flag(name: .customShort("c"), help: "Create a new file, overwriting an existing one.")
    var create = false

    @Flag(name: .customShort("b"), help: "Batch mode: the password is the last argument.")
    var batch = false

    @Flag(name: .customShort("D"), help: "Delete the user.")
    var delete = false

    @Argument(help: "The password file.")
    var file: String

    @Argument(help: "The user name (no ':').")
    var username: String

    @Argument(help: "The password (with -b only).")
    var password: String?

    func validate() throws {
        guard !username.isEmpty, !username.contains(":") else {
            throw ValidationError("the user name must not be empty or contain ':'")
        }
        if batch != (password != nil) {
            throw ValidationError(batch ? "-b needs a password argument" : "a password argument needs -b")
        }
        if delete, create || batch {
            throw ValidationError("-D cannot be combined with -c or -b")
        }
    }

    func run() async throws {
        try await CLIFailure.reporting("passwd") {
            var passwords = try create ? PasswordFile() : load()
            if delete {
                guard passwords.remove(username) else { throw CLIFailure(.dataError, "user \(username) not found in \(file)") }
            } else {
                let secret = try password ?? Self.promptTwice()
                passwords.set(username, hash: PasswordHash(password: Array(secret.utf8)))
            }
            try write(passwords.encoded)
        }
    }

    private func load() throws -> PasswordFile {
        guard FileManager.default.fileExists(atPath: file) else {
            throw CLIFailure(.noInput, "\(file) does not exist (use -c to create it)")
        }
        do throws(PasswordFileError) {
            return try PasswordFile.load(path: file)
        } catch {
            throw CLIFailure(.dataError, error.description)
        }
    }

    /// Writes in place so an existing file keeps its owner and mode; a new file gets mode 0600.
    private func write(_ text: String) throws {
        let data = Data(text.utf8)
        if create || !FileManager.default.fileExists(atPath: file) {
            _ = FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            defer { try? handle.close() }
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: data)
        } catch {
            throw CLIFailure(.ioError, "cannot write \(file): \(error)")
        }
    }

    /// Asks for the password twice on the terminal without echo (or reads two lines from a non-terminal stdin).
    private static func promptTwice() throws -> String {
        let first = try prompt("Password: ")
        let second = try prompt("Reenter password: ")
        guard first == second else { throw CLIFailure(.dataError, "passwords do not match") }
        return first
    }

    private static func prompt(_ text: String) throws -> String {
        Console.error(text)
        #if canImport(Glibc)
        var saved = termios()
        let isTerminal = isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &saved) == 0
        if isTerminal {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        defer {
            if isTerminal { _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
        }
        #endif
        guard let line = readLine(strippingNewline: true) else {
            throw CLIFailure(.noInput, "no password given")
        }
        return line
    }
}
