import NIOCore

/// The connection deadlines of one broker core (connect timeout, keepalive), earliest first: a binary min-heap of
/// (deadline, connection) pairs, so the core needs one event-loop timer for all its connections instead of one
/// `Scheduled` task each (a scheduled task, its promise, its closure and a weak reference per idle connection,
/// where an entry here is two words).
///
/// Entries are never removed early: a connection that closes or moves its deadline leaves its old entry behind, and
/// the core skips an entry whose deadline is no longer the connection's current one when it comes due. Stale
/// entries therefore live at most until their own deadline. Pure value type; time is passed in.
struct DeadlineHeap<ID: Hashable>: Sendable where ID: Sendable {
    /// One pending deadline.
    struct Entry: Sendable, Hashable {
        /// When it is due.
        var deadline: NIODeadline
        /// Whose deadline it is.
        var id: ID
    }

    private var entries: [Entry] = []

    /// The number of entries, stale ones included.
    var count: Int { entries.count }

    /// The earliest deadline, if any.
    var earliest: NIODeadline? { entries.first?.deadline }

    /// Adds `id`'s deadline.
    mutating func insert(_ id: ID, at deadline: NIODeadline) {
        entries.append(Entry(deadline: deadline, id: id))
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(now: NIODeadline) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            let right = left + 1
            let smaller = right < entries.count && entries[right].deadline < entries[left].deadline ? right : left
            guard entries[smaller].deadline < entries[parent].deadline else { return }
            entries.swapAt(smaller, parent)
            parent = smaller
        }
    }
}
