import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore

/// A unique client identifier / topic fragment per test.
func uniqueID(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8))"
}

/// A configuration for `broker` with a short keep-alive and a fast reconnect policy.
func testConfiguration(_ broker: RunningBroker, clientID: String) -> MQTTClientConfiguration {
    var configuration = MQTTClientConfiguration(clientID: clientID, port: broker.port)
    configuration.keepAlive = .seconds(5)
    configuration.reconnect = .exponential(
        initial: .milliseconds(100), factor: 2, maximum: .milliseconds(400), jitter: false)
    return configuration
}

/// Creates and connects a client.
func connectedClient(_ broker: RunningBroker, _ prefix: String = "client") async throws -> MQTTClient {
    let client = try MQTTClient(configuration: testConfiguration(broker, clientID: uniqueID(prefix)))
    try await client.connect()
    return client
}

/// Runs `operation`, failing with `HarnessError` if it takes longer than `timeout` (a hung operation is abandoned,
/// not awaited, so a missing acknowledgement fails the test instead of hanging it).
func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let box = ResultBox<T>()
    let task = Task {
        do { box.set(.success(try await operation())) } catch { box.set(.failure(error)) }
    }
    if try await poll(every: .milliseconds(5), for: timeout, until: { box.value != nil }), let result = box.value {
        return try result.get()
    }
    task.cancel()
    throw HarnessError("timed out after \(timeout): \(what)")
}

/// A result written by one task and polled by another.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    // @unchecked: `stored` is only touched while `lock` is held.
    private let lock = NSLock()
    private var stored: Result<T, any Error>?

    func set(_ result: Result<T, any Error>) {
        lock.lock()
        stored = result
        lock.unlock()
    }

    var value: Result<T, any Error>? {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

extension Array where Element == UInt8 {
    var text: String { String(decoding: self, as: UTF8.self) }
}
