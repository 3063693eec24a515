import ArgumentParser
import Foundation
import MQTTChat
import MQTTClient

/// `mqttchat chat`: an interactive (or scripted, via a pipe) chat in one room.
struct ChatCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Chat in a room: typed lines are sent, arriving messages and presence are printed.",
        discussion: """
            The user id (MQTT client id, inbox and history key) is --name unless -i ID is given, so \
            `/dm bob ...` reaches whoever chats as bob. Stdin may be a pipe: lines are read until EOF, \
            then the client waits --linger seconds for messages in flight, leaves and disconnects; \
            Ctrl-C or SIGTERM quits the same way (a second one exits at once). \
            \(ChatInput.helpText)
            Exit codes: 0 done, 64 usage, 65 invalid room or name, 69 broker unreachable, \
            74 history database unusable, 77 authentication refused.
            """,
        helpNames: [.long])

    @OptionGroup var connection: ClientOptions

    @Option(help: "The room to join.")
    var room: String

    @Option(help: "Your name, shown to others (and your user id unless -i is given).")
    var name: String

    @Option(name: .customLong("history-db"), help: "History database file (default ~/.mqttchat/<user id>.sqlite).")
    var historyDB: String?

    @Option(help: "Seconds to wait for messages in flight after stdin ends, before leaving.")
    var linger: Double = 1

    func validate() throws {
        guard (0...60).contains(linger) else { throw ValidationError("--linger must be between 0 and 60 seconds") }
    }

    func run() async throws {
        try await CLIFailure.reporting("chat") {
            let roomName = try CLINames.room(room)
            let userID = try CLINames.user(connection.clientID ?? name, what: connection.clientID == nil ? "--name" : "-i")
            var configuration = ChatClientConfiguration(
                userID: userID, profile: UserProfile(name: name), host: connection.host, port: connection.port)
            configuration.mqtt.username = connection.username
            configuration.mqtt.password = connection.password
            configuration.mqtt.keepAlive = .seconds(connection.keepalive)
            configuration.history = historyDB.map { .file(path: $0) } ?? .defaultFile(for: userID)
            // Ctrl-C (or SIGTERM) quits like /quit: others see "left" rather than "went offline". Installed before
            // the session starts, so a signal that arrives while joining is queued as the first line, not fatal.
            let input = StandardInputLines.stream()
            let interrupts = InterruptHandler { input.continuation.yield("/quit") }
            let session = try await ChatSession.start(
                configuration, room: roomName, address: connection.address, connectTimeout: connection.connectTimeout)
            await session.run(input: input.lines, linger: linger)
            withExtendedLifetime(interrupts) {}
        }
    }
}
