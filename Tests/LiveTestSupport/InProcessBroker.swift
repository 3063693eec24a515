import Logging
import MQTTBroker
import NIOCore

// The one place where a test starts our broker in-process: the client, chat and load generator tests through
// ``startBroker(kind:options:)`` (`.mqttchat`), the broker's own tests through `withLiveBroker` (a thin wrapper that
// adds the broker-test defaults) and their persistence tests through ``startInProcessBroker(_:logger:eventLoopGroup:)``.

/// A broker configuration with one listener on 127.0.0.1 at port 0 (the kernel picks a free port, and
/// ``startInProcessBroker(_:logger:eventLoopGroup:)`` reports it), then changed by `configure`.
public func loopbackBrokerConfiguration(
    base: BrokerConfiguration = BrokerConfiguration(), _ configure: (inout BrokerConfiguration) -> Void = { _ in }
) -> BrokerConfiguration {
    var configuration = base
    configuration.listeners = [.init(host: "127.0.0.1", port: 0)]
    configure(&configuration)
    return configuration
}

/// Starts our broker in-process with `configuration` and returns it with its bound addresses, in listener order
/// (port 0 becomes the real port). A broker that fails to start is shut down before the error is thrown, so nothing
/// it got that far with (its epoll loop's thread, a persistence directory's lock) outlives the attempt. The caller
/// shuts the broker down; ``withInProcessBroker(_:logger:eventLoopGroup:_:)`` does.
///
/// `eventLoopGroup` nil is the broker's default group (`MultiThreadedEventLoopGroup.singleton`).
public func startInProcessBroker(
    _ configuration: BrokerConfiguration, logger: Logger = quietBrokerLogger,
    eventLoopGroup: (any EventLoopGroup)? = nil
) async throws -> (server: MQTTBrokerServer, addresses: [SocketAddress]) {
    let server =
        if let eventLoopGroup {
            MQTTBrokerServer(configuration: configuration, logger: logger, eventLoopGroup: eventLoopGroup)
        } else {
            MQTTBrokerServer(configuration: configuration, logger: logger)
        }
    do {
        let addresses = try await server.start()
        guard !addresses.isEmpty else { throw HarnessError("our broker reported no bound address") }
        return (server, addresses)
    } catch {
        await server.shutdown()
        throw error
    }
}

/// Runs `body` with our broker started in-process on 127.0.0.1 at a port the kernel picks
/// (``loopbackBrokerConfiguration(_:)`` changed by `configure`), given the server and the address of its first
/// listener, and always shuts the broker down afterwards, also when `body` throws.
public func withInProcessBroker<T>(
    _ configure: (inout BrokerConfiguration) -> Void = { _ in },
    logger: Logger = quietBrokerLogger,
    eventLoopGroup: (any EventLoopGroup)? = nil,
    _ body: (MQTTBrokerServer, SocketAddress) async throws -> T
) async throws -> T {
    let (server, addresses) = try await startInProcessBroker(
        loopbackBrokerConfiguration(configure), logger: logger, eventLoopGroup: eventLoopGroup)
    do {
        let result = try await body(server, addresses[0])
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}
