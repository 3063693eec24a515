import NIOCore

/// A task of ``EpollEventLoop/scheduleTask(deadline:_:)`` waiting in the loop's heap: earliest deadline first, and
/// tasks with the same deadline in the order they were scheduled.
struct ScheduledEntry: Comparable, @unchecked Sendable {
    // @unchecked Sendable: built on any thread, then only touched on the loop (it crosses over in `execute`).
    let deadline: NIODeadline
    let box: ScheduledTaskBox
    /// Runs the task and completes its promise, unless it was cancelled.
    let run: () -> Void
    /// Fails the promise: the loop shut down before the task was due.
    let failShutdown: () -> Void
    /// Set by the loop when the entry goes into the heap.
    var order: UInt64 = 0

    static func < (lhs: ScheduledEntry, rhs: ScheduledEntry) -> Bool {
        (lhs.deadline, lhs.order) < (rhs.deadline, rhs.order)
    }

    static func == (lhs: ScheduledEntry, rhs: ScheduledEntry) -> Bool {
        lhs.deadline == rhs.deadline && lhs.order == rhs.order
    }
}

/// Whether a scheduled task was cancelled. Written and read on the loop only.
final class ScheduledTaskBox: @unchecked Sendable {
    var isCancelled = false
}
