#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EpollEventLoop
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Drives a policy through waits of the given lengths, each after `work` of work (all in nanoseconds). Returns
/// whether each wait polled, and the time after the last wait.
private func drive(_ policy: inout PollBeforeSleep, from start: UInt64, work: UInt64, waits: [UInt64]) -> ([Bool], UInt64) {
    var now = start
    var polled: [Bool] = []
    for wait in waits {
        now += work
        polled.append(policy.waitBegins(at: now) != nil)
        now += wait
        policy.waitEnded(at: now)
    }
    return (polled, now)
}

@Suite("PollBeforeSleep: a busy loop polls before it sleeps, an idle one sleeps at once")
struct PollBeforeSleepTests {
    static let limit: UInt64 = 20_000  // 20 µs

    @Test("a loop whose work fills most of a millisecond and whose events come quickly polls, up to the limit")
    func busyLoopWithQuickEventsPolls() {
        var policy = PollBeforeSleep(limit: Self.limit, now: 0)
        // 30 µs of work, then a 5 µs wait: busy share 6/7. No window has closed yet for the first ~29 waits.
        let (polled, now) = drive(&policy, from: 0, work: 30_000, waits: Array(repeating: 5_000, count: 40))
        #expect(polled.prefix(28).allSatisfy { !$0 }, "polled before a window had shown the loop busy")
        #expect(polled.suffix(10).allSatisfy { $0 }, "a busy loop with quick events did not poll")
        #expect(policy.waitBegins(at: now + 30_000) == now + 30_000 + Self.limit, "the poll does not end at the limit")
    }

    @Test("a poll that finds nothing within the limit turns polling off until a wait ends within it again")
    func longWaitTurnsPollingOff() {
        var policy = PollBeforeSleep(limit: Self.limit, now: 0)
        var (_, now) = drive(&policy, from: 0, work: 30_000, waits: Array(repeating: 5_000, count: 40))
        // This wait polls, finds nothing, and sleeps 300 µs in all.
        now += 30_000
        #expect(policy.waitBegins(at: now) != nil)
        now += 300_000
        policy.waitEnded(at: now)
        // The next wait sleeps at once; a quick one turns polling back on.
        now += 30_000
        #expect(policy.waitBegins(at: now) == nil, "polled again right after a poll that found nothing")
        now += 5_000
        policy.waitEnded(at: now)
        now += 30_000
        #expect(policy.waitBegins(at: now) != nil, "did not poll again after a quick wait")
    }

    @Test("a loop idle for most of a millisecond sleeps at once, however quickly single events come")
    func lightlyLoadedLoopSleeps() {
        var policy = PollBeforeSleep(limit: Self.limit, now: 0)
        // 2 µs of work, then waits of 10 µs (quick) and 100 µs in turn: busy share about 3%.
        let waits = (0..<200).map { $0 % 2 == 0 ? UInt64(10_000) : 100_000 }
        let (polled, _) = drive(&policy, from: 0, work: 2_000, waits: waits)
        #expect(!polled.contains(true), "a lightly loaded loop polled")
    }

    @Test("a busy loop that turns idle stops polling once a window shows it idle")
    func busyThenIdle() {
        var policy = PollBeforeSleep(limit: Self.limit, now: 0)
        let (_, now) = drive(&policy, from: 0, work: 30_000, waits: Array(repeating: 5_000, count: 40))
        // Now 1 µs of work between waits of 15 µs: quick waits, but mostly idle.
        let (polled, _) = drive(&policy, from: now, work: 1_000, waits: Array(repeating: 15_000, count: 200))
        #expect(polled.first == true, "stopped polling before any idle window closed")
        #expect(polled.suffix(100).allSatisfy { !$0 }, "kept polling though the loop was idle")
    }

    @Test("a limit of zero never polls, and a wait that may not sleep never polls")
    func zeroLimitAndLookOnlyWaitsNeverPoll() {
        var off = PollBeforeSleep(limit: 0, now: 0)
        let (polled, _) = drive(&off, from: 0, work: 30_000, waits: Array(repeating: 0, count: 100))
        #expect(!polled.contains(true))
        var on = PollBeforeSleep(limit: Self.limit, now: 0)
        let (_, now) = drive(&on, from: 0, work: 30_000, waits: Array(repeating: 5_000, count: 40))
        #expect(on.waitBegins(at: now + 1_000, canSleep: false) == nil, "polled on a wait that only looks")
        on.waitEnded(at: now + 1_500)
        #expect(on.waitBegins(at: now + 30_000) != nil, "a look-only wait turned polling off")
    }
}

/// Echoes each byte it reads after `work` of CPU; touched on the loop only.
private final class BusyEchoHandler: EpollEventHandler, @unchecked Sendable {
    let work: TimeAmount
    init(work: TimeAmount) { self.work = work }

    func descriptorReadable(_ descriptor: CInt) {
        var byte: UInt8 = 0
        guard read(descriptor, &byte, 1) == 1 else { return }
        let until = NIODeadline.now() + work
        while NIODeadline.now() < until {}
        _ = write(descriptor, &byte, 1)
    }

    func descriptorWritable(_ descriptor: CInt) {}
}

@Suite("EpollEventLoop polling before it sleeps, on a real loop")
struct EpollEventLoopPollingTests {
    /// Runs `rounds` round trips through a loop whose handler works `work` per byte, with timers and tasks from
    /// another thread due meanwhile; returns the loop's polling counts.
    private func pingPong(pollBeforeSleep: TimeAmount, rounds: Int = 400) throws -> PollingCounts {
        let loop = try EpollEventLoop(pollBeforeSleep: pollBeforeSleep)
        defer { shutDown(loop) }
        let (ours, peer) = try socketPair()
        defer { close(ours); close(peer) }
        let handler = BusyEchoHandler(work: .microseconds(100))
        _ = try #require(value(of: loop.submit { try loop.register(ours, interest: .readable, handler: handler) })).get()
        let timerFired = loop.scheduleTask(in: .milliseconds(5)) { NIODeadline.now() }
        let taskRan = DispatchSemaphore(value: 0)
        for round in 0..<rounds {
            if round == rounds / 2 { loop.execute { taskRan.signal() } }
            var byte = UInt8(truncatingIfNeeded: round)
            #expect(write(peer, &byte, 1) == 1)
            var ready = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
            try #require(poll(&ready, 1, 2_000) == 1, "no echo within 2 s in round \(round)")
            var echoed: UInt8 = 0
            #expect(read(peer, &echoed, 1) == 1 && echoed == byte)
        }
        #expect(taskRan.wait(timeout: .now() + 2) == .success, "a task from another thread did not run")
        #expect((try? value(of: timerFired.futureResult)?.get()) != nil, "a scheduled task did not fire")
        return try #require(value(of: loop.submit { loop.pollingCounts })).get()
    }

    @Test("a busy loop polls, and its polls find the next event; timers and tasks still run")
    func busyLoopPolls() throws {
        // 100 µs of work per quick round trip makes the loop busy; a 2 ms limit covers a slow peer thread.
        let counts = try pingPong(pollBeforeSleep: .milliseconds(2))
        #expect(counts.answeredPolls > 0, "no wait found its event by polling (\(counts.polledWaits) polled)")
        #expect(counts.polledWaits >= counts.answeredPolls)
    }

    @Test("a loop without a poll limit never polls")
    func loopWithoutLimitNeverPolls() throws {
        let counts = try pingPong(pollBeforeSleep: .zero)
        #expect(counts.polledWaits == 0)
    }
}
