import ArgumentParser
import Foundation
import GRDB
import MQTTChat

/// `mqttchat history`: prints a user's local chat history.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print the local history of what a chat user sent and received.",
        discussion: """
            Without --room or --dm, all rooms and direct conversations are shown together, oldest first. \
            Exit codes: 0 done, 64 usage, 65 invalid name, 66 no history database, 74 database unusable.
            """)

    @Option(help: "The user id whose history to show (the chat --name, or its -i).")
    var name: String

    @Option(help: "Only this room.")
    var room: String?

    @Option(help: "Only the direct messages exchanged with this user.")
    var dm: String?

    @Option(help: "Show at most this many (the latest) messages.")
    var limit = 50

    @Option(help: "History database file (default ~/.mqttchat/<name>.sqlite).")
    var db: String?

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
        if room != nil, dm != nil { throw ValidationError("give --room or --dm, not both") }
    }

    func run() async throws {
        try await CLIFailure.reporting("history") {
            let user = try CLINames.user(name, what: "--name")
            let location: ChatHistoryLocation = db.map { .file(path: $0) } ?? .defaultFile(for: user)
            let path = location.path ?? ""
            // Opening creates a missing file: a typo in --name must not leave an empty database behind.
            guard FileManager.default.fileExists(atPath: path) else {
                throw CLIFailure(.noInput, "no history database at '\(path)'")
            }
            let store: ChatHistoryStore
            do throws(ChatHistoryError) { store = try ChatHistoryStore(location: location) } catch { throw CLIFailure(error) }
            for record in try records(in: store, path: path) { Console.line(ChatLineFormat.history(record)) }
        }
    }

    private func records(in store: ChatHistoryStore, path: String) throws(CLIFailure) -> [ChatMessageRecord] {
        do {
            if let room { return try store.history(room: try CLINames.room(room), limit: limit) }
            if let dm { return try store.directMessages(with: try CLINames.user(dm, what: "--dm"), limit: limit) }
            var all: [ChatMessageRecord] = []
            let conversations = try HistoryConversations.list(path: path)
            for room in conversations.rooms { all += try store.history(room: room, limit: limit) }
            for peer in conversations.peers { all += try store.directMessages(with: peer, limit: limit) }
            // Stable: within one conversation the store's order (time, then arrival) is kept.
            let ordered = all.enumerated().sorted { ($0.element.sentAt, $0.offset) < ($1.element.sentAt, $1.offset) }
            return ordered.suffix(limit).map(\.element)
        } catch let error as CLIFailure {
            throw error
        } catch let error as ChatHistoryError {
            throw CLIFailure(error)
        } catch {
            throw CLIFailure(.ioError, "history database query failed: \(error)")
        }
    }
}

/// The rooms and direct-message peers a history database holds.
///
/// `ChatHistoryStore` can read one conversation at a time but cannot list them, so this reads the two
/// columns that name conversations (schema "v1-messages") directly, read-only.
enum HistoryConversations {
    static func list(path: String) throws -> (rooms: [RoomName], peers: [UserID]) {
        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabaseQueue(path: path, configuration: configuration)
        return try database.read { db in
            let rooms = try String.fetchAll(db, sql: "SELECT DISTINCT room FROM message WHERE room IS NOT NULL")
            let peers = try String.fetchAll(db, sql: "SELECT DISTINCT peerID FROM message WHERE peerID IS NOT NULL")
            return (rooms.compactMap { try? RoomName($0) }.sorted(), peers.compactMap { try? UserID($0) }.sorted())
        }
    }
}
