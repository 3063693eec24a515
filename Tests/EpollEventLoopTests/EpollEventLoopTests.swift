#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EpollEventLoop
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Waits for `future` at most `seconds`; nil if it did not complete in time (so a broken loop fails the test
/// instead of hanging it).
func value<T: Sendable>(of future: EventLoopFuture<T>, within seconds: Double = 5) -> Result<T, any Error>? {
    let result = NIOLockedValueBox<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    future.whenComplete { outcome in
        result.withLockedValue { $0 = outcome }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return result.withLockedValue { $0 }
}

/// A connected pair of non-blocking Unix stream sockets.
func socketPair() throws -> (CInt, CInt) {
    var pair: [CInt] = [-1, -1]
    try #require(socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
    return (pair[0], pair[1])
}

func shutDown(_ loop: EpollEventLoop) {
    let done = DispatchSemaphore(value: 0)
    loop.shutdownGracefully(queue: .global()) { _ in done.signal() }
    #expect(done.wait(timeout: .now() + 5) == .success, "the loop did not stop within 5 s")
}

/// Records the readiness calls of one descriptor; touched on the loop only.
private final class RecordingHandler: EpollEventHandler, @unchecked Sendable {
    var reads: [[UInt8]] = []
    var sawEndOfFile = false
    var writableCalls = 0
    var onRead: (() -> Void)?
    var onWritable: (() -> Void)?

    func descriptorReadable(_ descriptor: CInt) {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            reads.append(Array(buffer[0..<count]))
        } else if count == 0 {
            sawEndOfFile = true
        }
        onRead?()
    }

    func descriptorWritable(_ descriptor: CInt) {
        writableCalls += 1
        onWritable?()
    }
}

@Suite("EpollEventLoop: tasks, scheduled tasks and descriptors on a loop of our own")
struct EpollEventLoopTests {
    @Test("tasks from another thread run on the loop, in the order they were queued")
    func tasksRunInOrderOnTheLoop() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        #expect(!loop.inEventLoop)
        let seen = NIOLockedValueBox<[Int]>([])
        let promise = loop.makePromise(of: Bool.self)
        for index in 0..<100 {
            loop.execute {
                seen.withLockedValue { $0.append(index) }
                if index == 99 { promise.succeed(loop.inEventLoop) }
            }
        }
        let onLoop = try #require(value(of: promise.futureResult)).get()
        #expect(onLoop)
        #expect(seen.withLockedValue { $0 } == Array(0..<100))
    }

    @Test("a task queued from a task runs on a later pass, and submit returns its value")
    func nestedTasksAndSubmit() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let order = NIOLockedValueBox<[String]>([])
        let future = loop.submit {
            order.withLockedValue { $0.append("outer") }
            loop.execute { order.withLockedValue { $0.append("inner") } }
            return 42
        }.flatMap { value in
            loop.submit { value + 1 }
        }
        #expect(try #require(value(of: future)).get() == 43)
        #expect(order.withLockedValue { $0 } == ["outer", "inner"])
    }

    @Test("scheduled tasks fire no earlier than their deadline, earliest first; a cancelled one never runs")
    func scheduledTasksFireInDeadlineOrder() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let fired = NIOLockedValueBox<[String]>([])
        let start = NIODeadline.now()
        let late = loop.scheduleTask(in: .milliseconds(60)) { fired.withLockedValue { $0.append("late") } }
        let cancelled = loop.scheduleTask(in: .milliseconds(30)) { fired.withLockedValue { $0.append("cancelled") } }
        let early = loop.scheduleTask(in: .milliseconds(20)) { () -> NIODeadline in
            fired.withLockedValue { $0.append("early") }
            return .now()
        }
        cancelled.cancel()
        let earlyAt = try #require(value(of: early.futureResult)).get()
        #expect(earlyAt - start >= .milliseconds(20))
        _ = try #require(value(of: late.futureResult)).get()
        #expect(fired.withLockedValue { $0 } == ["early", "late"])
        let cancelledOutcome = try #require(value(of: cancelled.futureResult))
        #expect(throws: EventLoopError.cancelled) { try cancelledOutcome.get() }
    }

    @Test("shutting down fails the scheduled tasks not yet due and stops the thread")
    func shutdownFailsPendingScheduledTasks() throws {
        let loop = try EpollEventLoop()
        let pending = loop.scheduleTask(in: .seconds(60)) { 1 }
        // The callback goes on before the shutdown: once the loop has stopped it runs no task, callbacks included.
        let outcome = NIOLockedValueBox<Result<Int, any Error>?>(nil)
        pending.futureResult.whenComplete { result in outcome.withLockedValue { $0 = result } }
        shutDown(loop)
        let result = try #require(outcome.withLockedValue { $0 })
        #expect(throws: EventLoopError.shutdown) { try result.get() }
    }

    @Test("a task queued after the loop stopped is dropped, and writes nothing into a descriptor that took its number")
    func executeAfterShutdownWritesNothing() throws {
        let loop = try EpollEventLoop()
        shutDown(loop)
        // Descriptor numbers are reused lowest first: these pairs take the numbers of the loop's eventfd and epoll set.
        var pairs: [[CInt]] = []
        defer { for pair in pairs { pair.forEach { _ = close($0) } } }
        for _ in 0..<4 {
            let (one, other) = try socketPair()
            pairs.append([one, other])
        }
        let ran = NIOLockedValueBox(false)
        loop.execute { ran.withLockedValue { $0 = true } }
        usleep(50_000)
        #expect(!ran.withLockedValue { $0 })
        for descriptor in pairs.joined() {
            var byte: UInt8 = 0
            #expect(read(descriptor, &byte, 1) == -1 && errno == EAGAIN, "descriptor \(descriptor) received bytes")
        }
    }

    @Test("a registered socket's reads, its peer's close, and write readiness reach the handler on the loop")
    func descriptorReadinessReachesTheHandler() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let (ours, peer) = try socketPair()
        defer { close(ours) }
        let handler = RecordingHandler()
        let gotBytes = loop.makePromise(of: Void.self)
        let gotEndOfFile = loop.makePromise(of: Void.self)
        let gotWritable = loop.makePromise(of: Void.self)
        handler.onRead = {
            if handler.reads.flatMap({ $0 }) == Array("hello".utf8) { gotBytes.succeed(()) }
            if handler.sawEndOfFile {
                loop.deregister(ours)
                gotEndOfFile.succeed(())
            }
        }
        handler.onWritable = {
            try? loop.reregister(ours, interest: .readable)  // level-triggered: stop asking once seen
            gotWritable.succeed(())
        }
        let registered = loop.submit { try loop.register(ours, interest: [.readable, .writable], handler: handler) }
        _ = try #require(value(of: registered)).get()
        _ = try #require(value(of: gotWritable.futureResult)).get()
        _ = "hello".utf8.withContiguousStorageIfAvailable { write(peer, $0.baseAddress, $0.count) }
        _ = try #require(value(of: gotBytes.futureResult)).get()
        close(peer)
        _ = try #require(value(of: gotEndOfFile.futureResult)).get()
        let writableCalls = try #require(value(of: loop.submit { handler.writableCalls })).get()
        #expect(writableCalls == 1, "still called for write readiness after asking only for reads")
    }

    @Test("a task queued by a readiness handler runs with nothing else to wake the loop")
    func taskQueuedFromAHandlerRuns() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let (ours, peer) = try socketPair()
        defer { close(ours); close(peer) }
        let handler = RecordingHandler()
        let ranQueuedTask = DispatchSemaphore(value: 0)
        handler.onRead = {
            loop.deregister(ours)  // no further readiness: only the queued task itself can end the wait
            loop.execute { ranQueuedTask.signal() }
        }
        let registered = loop.submit { try loop.register(ours, interest: .readable, handler: handler) }
        _ = try #require(value(of: registered)).get()
        // From here on nothing but the handler queues work: waiting on a semaphore sends the loop no task.
        _ = "x".utf8.withContiguousStorageIfAvailable { write(peer, $0.baseAddress, $0.count) }
        #expect(ranQueuedTask.wait(timeout: .now() + 2) == .success, "the handler's task did not run within 2 s")
    }

    @Test("deregistering lets go of a handler; a reused or a far higher descriptor number reaches only its own")
    func handlersFollowDescriptorNumbers() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let (old, oldPeer) = try socketPair()
        weak var oldHandler: RecordingHandler?
        do {
            let handler = RecordingHandler()
            oldHandler = handler
            _ = try #require(value(of: loop.submit { try loop.register(old, interest: .readable, handler: handler) })).get()
        }
        _ = try #require(value(of: loop.submit { loop.deregister(old) })).get()
        #expect(oldHandler == nil, "deregistering lets go of the handler")
        close(old)
        close(oldPeer)
        let (reused, reusedPeer) = try socketPair()  // the lowest free numbers: the old pair's, unless another test took them
        let (other, highPeer) = try socketPair()
        let high = dup2(other, 900)  // a number far above the others
        close(other)
        try #require(high == 900)
        defer { close(reused); close(reusedPeer); close(high); close(highPeer) }
        let gotBoth = DispatchSemaphore(value: 0)
        let reusedHandler = RecordingHandler()
        let highHandler = RecordingHandler()
        reusedHandler.onRead = { gotBoth.signal() }
        highHandler.onRead = { gotBoth.signal() }
        let registered = loop.submit {
            try loop.register(reused, interest: .readable, handler: reusedHandler)
            try loop.register(high, interest: .readable, handler: highHandler)
        }
        _ = try #require(value(of: registered)).get()
        _ = "r".utf8.withContiguousStorageIfAvailable { write(reusedPeer, $0.baseAddress, $0.count) }
        _ = "h".utf8.withContiguousStorageIfAvailable { write(highPeer, $0.baseAddress, $0.count) }
        #expect(gotBoth.wait(timeout: .now() + 5) == .success)
        #expect(gotBoth.wait(timeout: .now() + 5) == .success)
        let reads = try #require(value(of: loop.submit {
            loop.deregister(reused)
            loop.deregister(high)
            return [reusedHandler.reads, highHandler.reads]
        })).get()
        #expect(reads == [[[UInt8(ascii: "r")]], [[UInt8(ascii: "h")]]])
    }

    @Test("the iteration-end handler runs once the iteration's ready descriptors and queued tasks are served")
    func iterationEndHandlerRunsLast() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let (first, firstPeer) = try socketPair()
        let (second, secondPeer) = try socketPair()
        defer { close(first); close(firstPeer); close(second); close(secondPeer) }
        let log = NIOLockedValueBox<[String]>([])
        let sawBoth = DispatchSemaphore(value: 0)
        let firstHandler = RecordingHandler()
        let secondHandler = RecordingHandler()
        firstHandler.onRead = {
            log.withLockedValue { $0.append("read") }
            loop.execute { log.withLockedValue { $0.append("task") } }
        }
        secondHandler.onRead = { log.withLockedValue { $0.append("read") } }
        let registered = loop.submit {
            try loop.register(first, interest: .readable, handler: firstHandler)
            try loop.register(second, interest: .readable, handler: secondHandler)
            loop.setIterationEndHandler {
                let reads = log.withLockedValue { entries in
                    entries.append("end")
                    return entries.filter { $0 == "read" }.count
                }
                if reads == 2 { sawBoth.signal() }
            }
        }
        _ = try #require(value(of: registered)).get()
        // Both sockets become readable while the loop is busy in a task, so its next wait returns both at once.
        let writesMade = DispatchSemaphore(value: 0)
        loop.execute { _ = writesMade.wait(timeout: .now() + 5) }
        for peer in [firstPeer, secondPeer] {
            _ = "x".utf8.withContiguousStorageIfAvailable { write(peer, $0.baseAddress, $0.count) }
        }
        writesMade.signal()
        #expect(sawBoth.wait(timeout: .now() + 5) == .success, "the iteration-end handler did not see both reads")
        let entries = log.withLockedValue { $0 }
        let firstRead = try #require(entries.firstIndex(of: "read"))
        #expect(Array(entries[firstRead...].prefix(4)) == ["read", "read", "task", "end"], "\(entries)")
    }

    @Test("a stopped loop lets go of its iteration-end handler")
    func iterationEndHandlerIsReleasedOnStop() throws {
        final class Captured: Sendable {}
        let loop = try EpollEventLoop()
        weak var captured: Captured?
        do {
            let strong = Captured()
            captured = strong
            let set = loop.submit { loop.setIterationEndHandler { _ = strong } }
            _ = try #require(value(of: set)).get()
        }
        #expect(captured != nil, "the loop holds its handler while it runs")
        shutDown(loop)
        #expect(captured == nil)
    }

    @Test("registering a descriptor that is not open fails with the system call's error")
    func registeringABadDescriptorFails() throws {
        let loop = try EpollEventLoop()
        defer { shutDown(loop) }
        let outcome = value(of: loop.submit {
            do {
                try loop.register(-1, interest: .readable, handler: RecordingHandler())
                return "registered"
            } catch {
                return "\(error)"
            }
        })
        let message = try #require(outcome).get()
        #expect(message.contains("epoll_ctl(add) failed"))
    }
}
