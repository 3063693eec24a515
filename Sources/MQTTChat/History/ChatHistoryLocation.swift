import Foundation

/// Where a client's local history database lives.
public enum ChatHistoryLocation: Sendable, Hashable {
    /// `~/.mqttchat/<clientID>.sqlite`.
    case defaultFile(for: UserID)
    /// A database file at this path; its folder is created if missing.
    case file(path: String)
    /// An in-memory database, gone when the client is released.
    case inMemory

    /// The file path, or `nil` for an in-memory database.
    public var path: String? {
        switch self {
        case .defaultFile(let user):
            let home = FileManager.default.homeDirectoryForCurrentUser
            return home.appendingPathComponent(".mqttchat").appendingPathComponent("\(user.rawValue).sqlite").path
        case .file(let path):
            return path
        case .inMemory:
            return nil
        }
    }
}
