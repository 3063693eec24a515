import GRDB

/// The history database's schema, versioned with GRDB migrations (add a new migration, never edit an old one).
enum ChatHistorySchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-messages") { db in
            try db.create(table: "message") { table in
                // Insertion order breaks ties between messages sent in the same millisecond.
                table.autoIncrementedPrimaryKey("seq")
                // Redelivered copies carry the same id and are ignored on insert.
                table.column("messageID", .text).notNull().unique()
                table.column("conversation", .text).notNull()  // "room" or "direct"
                table.column("room", .text)
                table.column("peerID", .text)
                table.column("direction", .text).notNull()
                table.column("senderID", .text).notNull()
                table.column("senderName", .text).notNull()
                table.column("senderLevel", .integer).notNull()
                table.column("senderIconURL", .text).notNull()
                table.column("sentAtMs", .integer).notNull()
                table.column("contentType", .text).notNull()  // "text" or "gift"
                table.column("text", .text)
                table.column("giftName", .text)
                table.column("giftURL", .text)
                table.column("giftCount", .integer)
            }
            try db.create(index: "message_room_time", on: "message", columns: ["room", "sentAtMs", "seq"])
            try db.create(index: "message_peer_time", on: "message", columns: ["peerID", "sentAtMs", "seq"])
        }
        return migrator
    }
}
