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
}
