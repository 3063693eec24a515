import Foundation
import GRDB

/// A client's local history of what it sent and received, in SQLite (there is no history on the server).
///
/// Messages are keyed by their envelope id: storing a redelivered copy is a no-op.
/// Thread-safe: GRDB's `DatabaseQueue` serialises all access.
public final class ChatHistoryStore: Sendable {
    private let database: DatabaseQueue

    /// Opens (creating if needed) the database at `location` and migrates it to the current schema.
    public init(location: ChatHistoryLocation) throws(ChatHistoryError) {
        let path = location.path ?? ":memory:"
        do {
            if let path = location.path {
                let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                database = try DatabaseQueue(path: path)
            } else {
                database = try DatabaseQueue()
            }
            try ChatHistorySchema.migrator.migrate(database)
        } catch {
            throw .openFailed(path: path, underlying: error)
        }
    }

    /// Stores `record`. Returns `false` if a message with the same id was already stored.
    @discardableResult
    public func store(_ record: ChatMessageRecord) throws(ChatHistoryError) -> Bool {
        var room: String?
        var peer: String?
        switch record.conversation {
        case .room(let name): room = name.rawValue
        case .direct(let other): peer = other.rawValue
        }
        var text: String?
        var gift: ChatGift?
        switch record.content {
        case .text(let line): text = line
        case .gift(let sent): gift = sent
        }
        let arguments: StatementArguments = [
            record.id, room == nil ? "direct" : "room", room, peer, record.direction.rawValue,
            record.sender.id.rawValue, record.sender.profile.name, Int64(record.sender.profile.level),
            record.sender.profile.iconURL, Int64((record.sentAt.timeIntervalSince1970 * 1000).rounded()),
            gift == nil ? "text" : "gift", text, gift?.name, gift?.url, gift.map { Int64($0.count) },
        ]
        do {
            return try database.write { db in
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO message (messageID, conversation, room, peerID, direction, senderID,
                            senderName, senderLevel, senderIconURL, sentAtMs, contentType, text, giftName, giftURL, giftCount)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: arguments)
                return db.changesCount > 0
            }
        } catch {
            throw .queryFailed(underlying: error)
        }
    }

    /// The last `limit` messages of `room`, oldest first (newest last).
    public func history(room: RoomName, limit: Int = 50) throws(ChatHistoryError) -> [ChatMessageRecord] {
        try fetchLatest(whereClause: "room = ?", argument: room.rawValue, limit: limit)
    }

    /// The last `limit` direct messages exchanged with `peer`, oldest first (newest last).
    public func directMessages(with peer: UserID, limit: Int = 50) throws(ChatHistoryError) -> [ChatMessageRecord] {
        try fetchLatest(whereClause: "peerID = ?", argument: peer.rawValue, limit: limit)
    }

    /// How many messages are stored in total.
    public func count() throws(ChatHistoryError) -> Int {
        do {
            return try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM message") ?? 0 }
        } catch {
            throw .queryFailed(underlying: error)
        }
    }

    private func fetchLatest(whereClause: String, argument: String, limit: Int) throws(ChatHistoryError)
        -> [ChatMessageRecord]
    {
        let rows: [Row]
        do {
            rows = try database.read { db in
                try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM message WHERE \(whereClause) ORDER BY sentAtMs DESC, seq DESC LIMIT ?",
                    arguments: [argument, max(0, limit)])
            }
        } catch {
            throw .queryFailed(underlying: error)
        }
        var records: [ChatMessageRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows.reversed() {
            records.append(try Self.record(from: row))
        }
        return records
    }

    private static func record(from row: Row) throws(ChatHistoryError) -> ChatMessageRecord {
        let id: String = row["messageID"] ?? ""
        func name<T>(_ column: String, _ make: (String) throws(ChatNameError) -> T) throws(ChatHistoryError) -> T {
            guard let raw: String = row[column] else { throw .corruptRow(messageID: id, column: column) }
            do { return try make(raw) } catch { throw .corruptRow(messageID: id, column: column) }
        }
        let conversation: ChatMessageRecord.Conversation
        if (row["conversation"] as String?) == "room" {
            conversation = .room(try name("room") { (raw) throws(ChatNameError) in try RoomName(raw) })
        } else {
            conversation = .direct(with: try name("peerID") { (raw) throws(ChatNameError) in try UserID(raw) })
        }
        let senderID = try name("senderID") { (raw) throws(ChatNameError) in try UserID(raw) }
        let content: ChatMessageRecord.Content
        if (row["contentType"] as String?) == "gift" {
            content = .gift(
                ChatGift(name: row["giftName"] ?? "", count: Int32(clamping: row["giftCount"] ?? 0 as Int64),
                    url: row["giftURL"] ?? ""))
        } else {
            content = .text(row["text"] ?? "")
        }
        guard let direction = ChatMessageRecord.Direction(rawValue: row["direction"] ?? "") else {
            throw .corruptRow(messageID: id, column: "direction")
        }
        let profile = UserProfile(
            name: row["senderName"] ?? "", level: Int32(clamping: row["senderLevel"] ?? 0 as Int64),
            iconURL: row["senderIconURL"] ?? "")
        let sentAtMs: Int64 = row["sentAtMs"] ?? 0
        return ChatMessageRecord(
            id: id, sender: ChatMember(id: senderID, profile: profile),
            sentAt: Date(timeIntervalSince1970: Double(sentAtMs) / 1000), conversation: conversation,
            content: content, direction: direction)
    }
}
