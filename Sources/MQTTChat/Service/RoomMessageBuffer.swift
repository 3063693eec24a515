/// The last messages of one room, as published (serialized envelopes), for a ``RoomHistoryService``.
struct RoomMessageBuffer: Sendable {
    /// One kept message.
    struct Entry: Sendable {
        let id: String
        let sentAtMs: Int64
        let bytes: [UInt8]
    }

    /// How many messages are kept; the oldest is dropped first.
    let capacity: Int
    private(set) var entries: [Entry] = []
    private var ids: Set<String> = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Keeps a message unless one with the same id is already kept (a redelivered QoS 1 copy).
    mutating func append(_ entry: Entry) {
        guard ids.insert(entry.id).inserted else { return }
        entries.append(entry)
        if entries.count > capacity {
            let dropped = entries.removeFirst()
            ids.remove(dropped.id)
        }
    }

    /// The newest `query.limit` messages sent at or after `query.sinceMs`, oldest first.
    func select(_ query: RoomHistoryQuery) -> [Entry] {
        Array(entries.filter { $0.sentAtMs >= query.sinceMs }.suffix(max(0, query.limit)))
    }
}
