import LiveTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The live-test harness's own checks, which the broker tests rely on to reach the broker they started.
@Suite("Test harness", .timeLimit(.minutes(1)))
struct HarnessTests {
    /// `startBroker(kind: .mosquitto)` waits for this before it hands the broker over: a free port probed a moment
    /// ago may be taken by another test's broker before mosquitto binds it, and then a connection reaches that one.
    @Test("a listening socket is attributed to the process that holds it, not to another broker's")
    func listenerOwnership() async throws {
        try await withBroker(.mosquitto) { mosquitto in
            let mosquittoPID = try #require(mosquitto.processIdentifier)
            #expect(listener(port: mosquitto.port, isHeldBy: mosquittoPID))
            #expect(!listener(port: mosquitto.port, isHeldBy: getpid()))
            try await withBroker(.mqttchat) { ours in
                #expect(listener(port: ours.port, isHeldBy: getpid()))
                #expect(!listener(port: ours.port, isHeldBy: mosquittoPID))
            }
        }
        let (held, unused) = try refusingPort()
        defer { close(held) }
        // Bound by this process, but not listening: no listener to attribute.
        #expect(!listener(port: unused, isHeldBy: getpid()))
    }

    /// The live tests' bounded waits (`withTimeout`, `eventually`, `waitForSubscriptions`) go through `poll`. A
    /// process starved past the deadline must still see what happened while it slept: here the condition turns true
    /// on the second look, and the first sleep (100 ms) outlasts the limit (30 ms), as when the awaited work finished
    /// during the last sleep.
    @Test("a bounded wait looks once more after its deadline")
    func pollLooksAfterTheDeadline() async throws {
        var looks = 0
        let held = try await poll(every: .milliseconds(100), for: .milliseconds(30)) {
            looks += 1
            return looks >= 2
        }
        #expect(held)
        #expect(looks == 2)
        // A condition that never holds still ends, false, after its limit.
        let start = ContinuousClock.now
        #expect(try await !poll(every: .milliseconds(5), for: .milliseconds(50)) { false })
        #expect(ContinuousClock.now - start >= .milliseconds(50))
    }
}
