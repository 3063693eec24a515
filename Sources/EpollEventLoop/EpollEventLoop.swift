#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLinuxSockets
public import Dispatch
import Foundation
import HeapModule
import NIOConcurrencyHelpers
public import NIOCore

/// An `EventLoop` of our own: one thread blocked in `epoll_wait` on a level-triggered epoll set, which runs
/// tasks, scheduled tasks, and the readiness callbacks of descriptors registered with it.
///
/// SwiftNIO's loop serves channels; this one serves raw descriptors (``register(_:interest:handler:)``), so code on
/// it reads and writes its sockets with plain system calls, without a channel pipeline in between. Everything
/// else that works on any `EventLoop` (futures and promises, `NIOLoopBound`, `scheduleTask`, `assumeIsolated`)
/// works on it. It cannot host SwiftNIO channels.
///
/// Each loop iteration: wait for readiness (not at all when tasks are queued, until the earliest scheduled task
/// otherwise), call the ready descriptors' handlers, run the scheduled tasks that are due, then the queued tasks in
/// the order they were queued, and last the iteration-end handler (``setIterationEndHandler(_:)``).
public final class EpollEventLoop: EventLoop, @unchecked Sendable {
    // @unchecked Sendable: what other threads touch is behind `lock` (`queued`, `wakeupPending`, `lifecycle`)
    // or written once before `init` returns (`threadID`); the rest is confined to the loop's thread.

    private let epoll: EpollSet
    private let lock = NIOLock()
    private var queued: [@Sendable () -> Void] = []
    private var wakeupPending = false
    private var lifecycle = Lifecycle.running
    private var shutdownCallbacks: [(DispatchQueue, @Sendable ((any Error)?) -> Void)] = []
    private var threadID = pthread_t()

    // Confined to the loop's thread, hence unchecked: one thread cannot overlap its own accesses, and a dynamic
    // exclusivity check is a runtime call on every access, on every iteration.
    @exclusivity(unchecked) private var scheduled = Heap<ScheduledEntry>()
    @exclusivity(unchecked) private var nextScheduledID: UInt64 = 0
    /// Indexed by descriptor: the kernel hands out the lowest free numbers, so the array stays as long as the most
    /// descriptors open at once, and finding a ready descriptor's handler costs no hash.
    @exclusivity(unchecked) private var handlers: [(any EpollEventHandler)?] = []
    /// A task was queued from the loop itself (which writes no wake-up): the next wait must not block.
    @exclusivity(unchecked) private var queuedOnLoop = false
    /// Called at the end of every iteration (``setIterationEndHandler(_:)``).
    @exclusivity(unchecked) private var iterationEndHandler: (() -> Void)?
    /// Whether a wait polls before it sleeps (``PollBeforeSleep``).
    @exclusivity(unchecked) private var pollBeforeSleep: PollBeforeSleep
    @exclusivity(unchecked) private var pollCounts = PollingCounts()

    private enum Lifecycle {
        case running
        case shuttingDown
        case stopped
    }

    /// Creates the epoll set and starts the loop's thread, named `name`. While busy, a wait polls for up to
    /// `pollBeforeSleep` before it sleeps (``PollBeforeSleep``); zero, the default, always sleeps at once.
    public init(name: String = "mqttchat-epoll-loop", pollBeforeSleep: TimeAmount = .zero) throws(SystemCallError) {
        epoll = try EpollSet()
        self.pollBeforeSleep = PollBeforeSleep(
            limit: UInt64(max(0, pollBeforeSleep.nanoseconds)), now: NIODeadline.now().uptimeNanoseconds)
        let started = ConditionLock(value: false)
        let thread = Thread { [self] in
            threadID = pthread_self()
            started.lock()
            started.unlock(withValue: true)
            run()
        }
        thread.name = name
        thread.start()
        started.lock(whenValue: true)
        started.unlock()
    }

    // MARK: EventLoop

    public var inEventLoop: Bool {
        pthread_equal(pthread_self(), threadID) != 0
    }

    public func execute(_ task: @escaping @Sendable () -> Void) {
        let onLoop = inEventLoop
        if onLoop {
            queuedOnLoop = true
        }
        lock.withLock {
            // Stopped: the task is dropped, and no wake-up is written, since the eventfd's number may belong to
            // another file by now. The wake-up is written under the lock, so it cannot cross the loop's closing.
            guard lifecycle != .stopped else { return }
            queued.append(task)
            guard !onLoop, !wakeupPending else { return }
            wakeupPending = true
            epoll.signal()
        }
    }

    public func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise = makePromise(of: T.self)
        let box = ScheduledTaskBox()
        let entry = ScheduledEntry(
            deadline: deadline, box: box,
            run: {
                guard !box.isCancelled else { return }
                do {
                    promise.assumeIsolated().succeed(try task())
                } catch {
                    promise.fail(error)
                }
            },
            failShutdown: { promise.fail(EventLoopError.shutdown) })
        if inEventLoop {
            addScheduled(entry)
        } else {
            execute { self.addScheduled(entry) }
        }
        return Scheduled(promise: promise) { [self] in
            if inEventLoop {
                box.isCancelled = true
            } else {
                execute { box.isCancelled = true }
            }
        }
    }

    public func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        scheduleTask(deadline: .now() + delay, task)
    }

    public func preconditionInEventLoop(file: StaticString, line: UInt) {
        precondition(inEventLoop, "not on the EpollEventLoop's thread", file: file, line: line)
    }

    public func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        precondition(!inEventLoop, "on the EpollEventLoop's thread", file: file, line: line)
    }

    // MARK: EventLoopGroup

    public func next() -> any EventLoop { self }

    public func any() -> any EventLoop { self }

    public func makeIterator() -> EventLoopIterator { EventLoopIterator([self]) }

    /// Stops the loop once the tasks queued before this call have run; scheduled tasks not yet due fail with
    /// `EventLoopError.shutdown`, and tasks queued once it has stopped never run. Descriptors still registered are not
    /// closed: their owners close them.
    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        let alreadyStopped: Bool = lock.withLock {
            switch lifecycle {
            case .stopped:
                return true
            case .running, .shuttingDown:
                lifecycle = .shuttingDown
                shutdownCallbacks.append((queue, callback))
                return false
            }
        }
        if alreadyStopped {
            queue.async { callback(nil) }
        } else {
            execute {}  // wakes the loop, which sees the shutdown once this task has run
        }
    }

    // MARK: Descriptors

    /// Calls `handler` on this loop whenever `descriptor` is ready for what `interest` asks (level-triggered), until
    /// ``deregister(_:)``. The handler is held strongly while registered. Call on the loop.
    public func register(
        _ descriptor: CInt, interest: EpollInterest, handler: any EpollEventHandler
    ) throws(SystemCallError) {
        preconditionInEventLoop(file: #file, line: #line)
        try epoll.control(
            EPOLL_CTL_ADD, descriptor, events: interest.events, data: Self.tag(descriptor), "epoll_ctl(add)")
        let index = Int(descriptor)
        if index >= handlers.count {
            handlers.append(contentsOf: repeatElement(nil, count: index - handlers.count + 1))
        }
        handlers[index] = handler
    }

    /// Changes what `descriptor` is watched for. Call on the loop.
    public func reregister(_ descriptor: CInt, interest: EpollInterest) throws(SystemCallError) {
        preconditionInEventLoop(file: #file, line: #line)
        try epoll.control(
            EPOLL_CTL_MOD, descriptor, events: interest.events, data: Self.tag(descriptor), "epoll_ctl(mod)")
    }

    /// Stops watching `descriptor` and releases its handler; call before closing it. Call on the loop.
    public func deregister(_ descriptor: CInt) {
        preconditionInEventLoop(file: #file, line: #line)
        guard let index = slot(of: descriptor), handlers[index] != nil else { return }
        handlers[index] = nil
        epoll.remove(descriptor)
    }

    // MARK: The end of an iteration

    /// Calls `handler` on this loop at the end of every iteration, after the ready descriptors' handlers, the due
    /// scheduled tasks and the queued tasks; nil removes it. Call on the loop. The loop holds `handler` until it is
    /// replaced or the loop stops.
    ///
    /// For work the handlers of one iteration accumulate and want done once when they have all run (such as
    /// flushing output they held back): it costs no task, no allocation and no lock per iteration, where
    /// `execute` from the loop would cost all three and an extra `epoll_wait` each time. Whatever it queues or
    /// schedules runs in a later iteration; whatever it leaves to do has to be done by then, since the next
    /// iteration may wait for readiness indefinitely.
    public func setIterationEndHandler(_ handler: (() -> Void)?) {
        preconditionInEventLoop(file: #file, line: #line)
        iterationEndHandler = handler
    }

    /// `descriptor`'s slot in ``handlers``, if it has one.
    private func slot(of descriptor: CInt) -> Int? {
        let index = Int(descriptor)
        return handlers.indices.contains(index) ? index : nil
    }

    /// A descriptor's events carry its number (never ``EpollSet/wakeupTag``).
    private static func tag(_ descriptor: CInt) -> UInt64 {
        UInt64(UInt32(bitPattern: descriptor))
    }

    // MARK: The thread

    /// Takes the lock only when tasks may be waiting: the wake-up fired (tasks from other threads, a shutdown), or
    /// a task was queued on the loop. An iteration with socket events alone takes no lock.
    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var tasks: [@Sendable () -> Void] = []
        while true {
            let count = waitForEvents(into: &events)
            if count < 0, errno != EINTR { break }
            var woken = false
            for event in events.prefix(max(count, 0)) {
                if event.data.u64 == EpollSet.wakeupTag {
                    epoll.drainWakeup()
                    woken = true
                } else {
                    dispatch(event)
                }
            }
            runDueScheduledTasks()
            guard woken || queuedOnLoop else {
                iterationEndHandler?()
                continue
            }
            queuedOnLoop = false
            let stopping = lock.withLock {
                swap(&tasks, &queued)
                wakeupPending = false
                return lifecycle == .shuttingDown
            }
            for task in tasks { task() }
            tasks.removeAll(keepingCapacity: true)
            iterationEndHandler?()
            if stopping, !queuedOnLoop, lock.withLock({ queued.isEmpty }) { break }
        }
        stop()
    }

    /// Waits for readiness: not at all when tasks are queued, otherwise until the earliest scheduled task, after
    /// polling for a moment while the loop is busy (``PollBeforeSleep``).
    private func waitForEvents(into events: inout [epoll_event]) -> Int {
        let timeout = queuedOnLoop ? 0 : timeoutUntilEarliestScheduled()
        guard pollBeforeSleep.limit > 0 else { return epoll.wait(into: &events, timeout: timeout) }
        var count = 0
        let pollUntil = pollBeforeSleep.waitBegins(at: NIODeadline.now().uptimeNanoseconds, canSleep: timeout != 0)
        if let pollUntil {
            pollCounts.polledWaits += 1
            repeat {
                count = epoll.wait(into: &events, timeout: 0)
            } while count == 0 && NIODeadline.now().uptimeNanoseconds < pollUntil
            if count > 0 { pollCounts.answeredPolls += 1 }
        }
        if count == 0 {
            // After a poll, the earliest scheduled task is nearer than the first timeout said.
            count = epoll.wait(into: &events, timeout: pollUntil == nil ? timeout : timeoutUntilEarliestScheduled())
        }
        let waitError = errno  // the caller reads a failed wait's errno
        pollBeforeSleep.waitEnded(at: NIODeadline.now().uptimeNanoseconds)
        errno = waitError
        return count
    }

    /// How often the loop's waits polled before they slept, and how often a poll found events. Read it on the loop.
    public var pollingCounts: PollingCounts {
        preconditionInEventLoop()
        return pollCounts
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        let descriptor = CInt(truncatingIfNeeded: data)
        guard let index = slot(of: descriptor) else { return }
        if event.events & EPOLLOUT.rawValue != 0, let handler = handlers[index] {
            handler.descriptorWritable(descriptor)
        }
        let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
        if event.events & readable != 0, let handler = handlers[index] {
            handler.descriptorReadable(descriptor)
        }
    }

    private func addScheduled(_ entry: ScheduledEntry) {
        nextScheduledID += 1
        var entry = entry
        entry.order = nextScheduledID
        scheduled.insert(entry)
    }

    private func runDueScheduledTasks() {
        guard !scheduled.isEmpty else { return }
        let now = NIODeadline.now()
        while let earliest = scheduled.min, earliest.deadline <= now {
            _ = scheduled.popMin()
            earliest.run()
        }
    }

    /// Milliseconds until the earliest live scheduled task (rounded up, so it is due when the wait ends), or -1.
    private func timeoutUntilEarliestScheduled() -> CInt {
        while let earliest = scheduled.min, earliest.box.isCancelled {
            _ = scheduled.popMin()
        }
        guard let earliest = scheduled.min else { return -1 }
        let nanoseconds = (earliest.deadline - .now()).nanoseconds
        guard nanoseconds > 0 else { return 0 }
        return CInt(min(Int64(CInt.max), (nanoseconds + 999_999) / 1_000_000))
    }

    private func stop() {
        while let entry = scheduled.popMin() {
            entry.box.isCancelled = true
            entry.failShutdown()
        }
        handlers = []
        iterationEndHandler = nil  // it may hold what holds the loop
        let callbacks = lock.withLock {
            lifecycle = .stopped  // from here on no task is queued and no wake-up written, so the set may close
            let callbacks = shutdownCallbacks
            shutdownCallbacks = []
            return callbacks
        }
        epoll.close()
        for (queue, callback) in callbacks {
            queue.async { callback(nil) }
        }
    }
}
