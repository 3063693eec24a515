import Foundation
import LiveTestSupport
import Logging
import NIOCore
import NIOPosix

@testable import MQTTBroker

/// Starts an in-process broker on an ephemeral loopback port for one test and always shuts it down.
func withLiveBroker<T>(
    _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
) async throws -> T {
    var configuration = BrokerConfiguration()
    configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
    configuration.sysInterval = nil
    configure(&configuration)
    var logger = Logger(label: "mqttchat.broker.test")
    logger.logLevel = ProcessInfo.processInfo.environment["BROKER_TEST_LOG"] == nil ? .critical : .trace
    let server = MQTTBrokerServer(configuration: configuration, logger: logger, eventLoopGroup: eventLoopGroup)
    let address = try await server.start()[0]
    do {
        let result = try await body(server, address)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// ``withLiveBroker(_:eventLoopGroup:_:)`` on a group of `loops` event loops of its own, over which the broker spreads
/// its sockets; the group is shut down afterwards.
func withLiveBroker<T>(
    loops: Int, _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: loops)
    do {
        let result = try await withLiveBroker(
            {
                $0.eventLoopCount = loops
                configure(&$0)
            }, eventLoopGroup: group, body)
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
