import Foundation

/// A password file in mosquitto's syntax: one `username:hash` per line, `#` comment lines and blank lines
/// ignored; the username is everything before the first `:`. Keeps the line order so that ``encoded`` writes the
/// file back the way `mosquitto_passwd` would.
public struct PasswordFile: Sendable, Hashable {
    /// One user.
    public struct Entry: Sendable, Hashable {
        /// The user name.
        public var username: String
        /// The stored hash.
        public var hash: PasswordHash

        /// Creates an entry.
        public init(username: String, hash: PasswordHash) {
            self.username = username
            self.hash = hash
        }
    }

    /// The users, in file order; user names are unique.
    public private(set) var entries: [Entry] = []

    /// An empty file.
    public init() {}

    /// Parses file text; `source` names it in errors.
    public init(parsing text: String, source: String = "<password file>") throws(PasswordFileError) {
        for (index, rawLine) in ConfigText.lines(of: text).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .malformedLine(source: source, line: index + 1, reason: "expected username:hash")
            }
            let username = String(line[..<colon])
            let hash: PasswordHash
            do throws(PasswordHashError) {
                hash = try PasswordHash(parsing: String(line[line.index(after: colon)...]))
            } catch {
                throw .malformedLine(source: source, line: index + 1, reason: error.description)
            }
            guard self[username] == nil else { throw .duplicateUser(source: source, line: index + 1, username: username) }
            entries.append(Entry(username: username, hash: hash))
        }
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(PasswordFileError) -> PasswordFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, reason: String(describing: error))
        }
        return try PasswordFile(parsing: text, source: path)
    }

    /// The stored hash of `username`.
    public subscript(username: String) -> PasswordHash? {
        entries.first { $0.username == username }?.hash
    }

    /// Adds `username` or replaces its hash in place.
    public mutating func set(_ username: String, hash: PasswordHash) {
        if let index = entries.firstIndex(where: { $0.username == username }) {
            entries[index].hash = hash
        } else {
            entries.append(Entry(username: username, hash: hash))
        }
    }

    /// Removes `username`; returns whether it was there.
    @discardableResult
    public mutating func remove(_ username: String) -> Bool {
        guard let index = entries.firstIndex(where: { $0.username == username }) else { return false }
        entries.remove(at: index)
        return true
    }

    /// The file text: one `username:hash` line per user.
    public var encoded: String {
        entries.map { "\($0.username):\($0.hash.encoded)\n" }.joined()
    }
}

/// Why a password file could not be used.
public enum PasswordFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// A line is not `username:hash` with a mosquitto hash.
    case malformedLine(source: String, line: Int, reason: String)
    /// The same user name appears twice.
    case duplicateUser(source: String, line: Int, username: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read password file \(path): \(reason)"
        case .malformedLine(let source, let line, let reason): return "\(source):\(line): \(reason)"
        case .duplicateUser(let source, let line, let username): return "\(source):\(line): user '\(username)' appears twice"
        }
    }
}
