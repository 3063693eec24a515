import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A process with many open files gives the client's socket a descriptor number of 1024 or above, which `select(2)`
/// (and so `mosquitto_loop`) cannot watch: the network thread spun and nothing arrived. The client waits with
/// `poll(2)` instead. Serialized: the test holds a thousand descriptors while it runs.
@Suite("A client whose socket is numbered above FD_SETSIZE", .serialized, .timeLimit(.minutes(1)))
struct HighDescriptorTests {
    @Test("publish and receive work when the client's socket descriptors are numbered above 1024",
          arguments: TestBrokerKind.allCases)
    func socketAboveSelectLimit(kind: TestBrokerKind) async throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_cur > 1200, "needs a descriptor limit above 1200 (ulimit -n)")
        // Fill the low descriptor numbers, so the sockets opened next get numbers above 1024.
        var placeholders: [CInt] = []
        defer { placeholders.forEach { close($0) } }
        while placeholders.count < 1100 {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            placeholders.append(fd)
        }
        try #require(placeholders.last.map { $0 >= 1024 } == true)
        try await withBroker(kind) { broker in
            let subscriber = try await connectedClient(broker, "high-sub")
            let publisher = try await connectedClient(broker, "high-pub")
            let topic = "high/\(uniqueID("t"))"
            _ = try await subscriber.subscribe(topic, qos: .atLeastOnce)
            let received = Collector(subscriber.messages())
            for index in 0..<10 {
                try await withTimeout(.seconds(5), "publish \(index)") {
                    try await publisher.publish(topic: topic, payload: Array("m\(index)".utf8), qos: .atLeastOnce)
                }
            }
            let messages = try await received.wait(count: 10)
            #expect(messages.map(\.payload.text) == (0..<10).map { "m\($0)" })
            await subscriber.disconnect()
            await publisher.disconnect()
        }
    }
}
