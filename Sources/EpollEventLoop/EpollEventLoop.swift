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
/// the order they were queued.
public final class EpollEventLoop: EventLoop, @unchecked Sendable {
    // @unchecked Sendable: what other threads touch is behind `lock` (`queued`, `wakeupPending`, `lifecycle`)
    // or written once before `init` returns (`threadID`); the rest is confined to the loop's thread.

    private let epoll: CInt
    private let wakeup: CInt
    private let lock = NIOLock()
    private var queued: [@Sendable () -> Void] = []
    private var wakeupPending = false
    private var lifecycle = Lifecycle.running
    private var shutdownCallbacks: [(DispatchQueue, @Sendable ((any Error)?) -> Void)] = []
    private var threadID = pthread_t()

    // Confined to the loop's thread.
    private var scheduled = Heap<ScheduledEntry>()
    private var nextScheduledID: UInt64 = 0
    private var handlers: [CInt: any EpollEventHandler] = [:]

    private enum Lifecycle {
        case running
        case shuttingDown
        case stopped
    }

    private static let wakeupTag: UInt64 = 1 << 63

    /// Creates the epoll set and starts the loop's thread, named `name`.
    public init(name: String = "mqttchat-epoll-loop") throws(EpollEventLoopError) {
        let epoll = epoll_create1(CInt(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw .systemCall("epoll_create1", errno) }
        let wakeup = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeup >= 0 else {
            let error = errno
            Glibc.close(epoll)
            throw .systemCall("eventfd", error)
        }
        self.epoll = epoll
        self.wakeup = wakeup
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeupTag
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event) == 0 else {
            let error = errno
            Glibc.close(wakeup)
            Glibc.close(epoll)
            throw .systemCall("epoll_ctl(eventfd)", error)
        }
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
        let needsWakeup = lock.withLock {
            // Stopped: the task is dropped, and no wake-up is written, since the eventfd's number may belong to
            // another file by now.
            guard lifecycle != .stopped else { return false }
            queued.append(task)
            guard !inEventLoop, !wakeupPending else { return false }
            wakeupPending = true
            return true
        }
        if needsWakeup { signal() }
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
    ) throws(EpollEventLoopError) {
        preconditionInEventLoop(file: #file, line: #line)
        try control(EPOLL_CTL_ADD, descriptor, interest, "epoll_ctl(add)")
        handlers[descriptor] = handler
    }

    /// Changes what `descriptor` is watched for. Call on the loop.
    public func reregister(_ descriptor: CInt, interest: EpollInterest) throws(EpollEventLoopError) {
        preconditionInEventLoop(file: #file, line: #line)
        try control(EPOLL_CTL_MOD, descriptor, interest, "epoll_ctl(mod)")
    }

    /// Stops watching `descriptor` and releases its handler; call before closing it. Call on the loop.
    public func deregister(_ descriptor: CInt) {
        preconditionInEventLoop(file: #file, line: #line)
        guard handlers.removeValue(forKey: descriptor) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, &event)
    }

    // MARK: The thread

    private func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeup, $0.baseAddress, 8) }
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var tasks: [@Sendable () -> Void] = []
        while true {
            let hasQueuedTasks = lock.withLock { !queued.isEmpty }
            let timeout = hasQueuedTasks ? 0 : timeoutUntilEarliestScheduled()
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, CInt($0.count), timeout) }
            if count < 0, errno != EINTR { break }
            for event in events.prefix(Int(max(count, 0))) {
                dispatch(event)
            }
            runDueScheduledTasks()
            let stopping = lock.withLock {
                swap(&tasks, &queued)
                wakeupPending = false
                return lifecycle == .shuttingDown
            }
            for task in tasks { task() }
            tasks.removeAll(keepingCapacity: true)
            if stopping, lock.withLock({ queued.isEmpty }) { break }
        }
        stop()
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        if data == Self.wakeupTag {
            var drained: UInt64 = 0
            _ = withUnsafeMutableBytes(of: &drained) { read(wakeup, $0.baseAddress, 8) }
            return
        }
        let descriptor = CInt(truncatingIfNeeded: data)
        if event.events & EPOLLOUT.rawValue != 0, let handler = handlers[descriptor] {
            handler.descriptorWritable(descriptor)
        }
        let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue
        if event.events & readable != 0, let handler = handlers[descriptor] {
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
        handlers = [:]
        Glibc.close(wakeup)
        Glibc.close(epoll)
        let callbacks = lock.withLock {
            lifecycle = .stopped
            let callbacks = shutdownCallbacks
            shutdownCallbacks = []
            return callbacks
        }
        for (queue, callback) in callbacks {
            queue.async { callback(nil) }
        }
    }

    private func control(
        _ operation: CInt, _ descriptor: CInt, _ interest: EpollInterest, _ call: StaticString
    ) throws(EpollEventLoopError) {
        var event = epoll_event()
        event.events = interest.events
        event.data.u64 = UInt64(UInt32(bitPattern: descriptor))
        guard epoll_ctl(epoll, operation, descriptor, &event) == 0 else { throw .systemCall("\(call)", errno) }
    }
}
