import Foundation
import LiveTestSupport
import Logging
import NIOCore
import NIOPosix

@testable import MQTTBroker

/// The broker tests' logger: silent unless `BROKER_TEST_LOG` is set, then everything.
let brokerTestLogger: Logger = {
    var logger = Logger(label: "mqttchat.broker.test")
    logger.logLevel = ProcessInfo.processInfo.environment["BROKER_TEST_LOG"] == nil ? .critical : .trace
    return logger
}()

/// Starts an in-process broker on an ephemeral loopback port for one test and always shuts it down: LiveTestSupport's
/// ``withInProcessBroker(_:logger:eventLoopGroup:_:)`` with the broker tests' defaults (no `$SYS` publishing, which
/// would add messages the tests do not expect; ``brokerTestLogger``).
func withLiveBroker<T>(
    _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
) async throws -> T {
    try await withInProcessBroker(
        {
            $0.sysInterval = nil
            configure(&$0)
        }, logger: brokerTestLogger, eventLoopGroup: eventLoopGroup, body)
}

/// ``withLiveBroker(_:eventLoopGroup:_:)`` on a group of `loops` event loops of its own, over which the broker spreads
/// its sockets; the group is shut down afterwards.
func withLiveBroker<T>(
    loops: Int, _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
) async throws -> T {
    try await withEventLoopGroup(threads: loops) { group in
        try await withLiveBroker(
            {
                $0.eventLoopCount = loops
                configure(&$0)
            }, eventLoopGroup: group, body)
    }
}

/// Runs `body` with a group of `threads` event loops of its own and always shuts the group down afterwards.
func withEventLoopGroup<T>(
    threads: Int, _ body: (MultiThreadedEventLoopGroup) async throws -> T
) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
    do {
        let result = try await body(group)
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
}

extension MQTTBrokerServer {
    /// Waits (bounded) until the broker holds `count` subscriptions, so a test knows a subscriber is ready.
    func waitForSubscriptions(_ count: Int, timeout: Duration = .seconds(5)) async throws -> Bool {
        try await poll(every: .milliseconds(20), for: timeout) { try await withCore({ $0.subscriptionCount }) == count }
    }
}

extension SocketAddress {
    /// The port as a string for command line tools.
    var portString: String { port.map(String.init) ?? "0" }
}
