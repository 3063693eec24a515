// Publish throughput: MQTTClient (Swift API) versus libmosquitto's C API called directly, both against a
// mosquitto started here. Usage: MQTTClientBench [--count N] (messages per QoS level and API; default 50000, about 11 s in release).
// Run with: swift run --package-path Benchmarks --scratch-path .build-bench-release -c release MQTTClientBench
import CMosquitto
import Foundation
import MQTTClient
import MQTTCore

/// Messages a run may have unacknowledged at once, for both APIs.
let window = 1000
let payload = [UInt8](repeating: 0x42, count: 64)

func parseCount() -> Int {
    let arguments = CommandLine.arguments
    if let index = arguments.firstIndex(of: "--count"), index + 1 < arguments.count, let count = Int(arguments[index + 1]),
        count > 0
    {
        return count
    }
    return 50_000
}

// MARK: Broker

func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 ? getsockname(fd, pointer, &length) : -1
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

func startMosquitto(port: Int) throws -> (Process, URL) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqttclient-bench-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let config = directory.appendingPathComponent("mosquitto.conf")
    try """
    listener \(port) 127.0.0.1
    allow_anonymous true
    log_dest stdout
    log_type error
    persistence false
    max_inflight_messages 0
    max_queued_messages 0

    """.write(to: config, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
    process.arguments = ["-c", config.path]
    try process.run()
    Thread.sleep(forTimeInterval: 0.3)
    return (process, directory)
}

// MARK: Swift API

func benchSwift(port: Int, qos: QoS, count: Int) async throws -> Double {
    var configuration = MQTTClientConfiguration(clientID: "bench-swift-\(qos.rawValue)", port: port)
    configuration.maxInflightMessages = 100
    let client = try MQTTClient(configuration: configuration)
    try await client.connect()
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            if index >= window { try await group.next() }
            group.addTask { try await client.publish(topic: "bench/swift", payload: payload, qos: qos) }
        }
        try await group.waitForAll()
    }
    let elapsed = start.duration(to: .now)
    await client.disconnect()
    return Double(count) / seconds(elapsed)
}

// MARK: C API

/// Counts acknowledgements on libmosquitto's thread. `@unchecked Sendable`: semaphores are thread-safe and
/// `acknowledged` is only touched under `lock`.
final class CBenchContext: @unchecked Sendable {
    let slots = DispatchSemaphore(value: window)
    let connected = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var acknowledged = 0
    var expected = 0
}

func benchC(port: Int, qos: QoS, count: Int) throws -> Double {
    let context = CBenchContext()
    context.expected = count
    guard let mosq = mosquitto_new("bench-c-\(qos.rawValue)", true, Unmanaged.passUnretained(context).toOpaque())
    else { throw CError("mosquitto_new failed") }
    defer { mosquitto_destroy(mosq) }
    mosquitto_max_inflight_messages_set(mosq, 100)
    mosquitto_connect_callback_set(mosq) { _, user, _ in
        guard let user else { return }
        Unmanaged<CBenchContext>.fromOpaque(user).takeUnretainedValue().connected.signal()
    }
    mosquitto_publish_callback_set(mosq) { _, user, _ in
        guard let user else { return }
        let context = Unmanaged<CBenchContext>.fromOpaque(user).takeUnretainedValue()
        context.slots.signal()
        context.lock.lock()
        context.acknowledged += 1
        let done = context.acknowledged == context.expected
        context.lock.unlock()
        if done { context.finished.signal() }
    }
    guard mosquitto_connect(mosq, "127.0.0.1", Int32(port), 60) == 0, mosquitto_loop_start(mosq) == 0 else {
        throw CError("connect failed")
    }
    defer { mosquitto_loop_stop(mosq, true) }
    guard context.connected.wait(timeout: .now() + 5) == .success else { throw CError("no CONNACK") }
    let start = ContinuousClock.now
    for _ in 0..<count {
        context.slots.wait()
        let rc = payload.withUnsafeBytes {
            mosquitto_publish(mosq, nil, "bench/c", Int32($0.count), $0.baseAddress, Int32(qos.rawValue), false)
        }
        guard rc == 0 else { throw CError("publish failed: \(rc)") }
    }
    guard context.finished.wait(timeout: .now() + 120) == .success else { throw CError("acks missing") }
    let elapsed = start.duration(to: .now)
    mosquitto_disconnect(mosq)
    return Double(count) / seconds(elapsed)
}

struct CError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

// MARK: Main

let count = parseCount()
mosquitto_lib_init()
let port = freePort()
let (broker, directory) = try startMosquitto(port: port)
defer {
    broker.terminate()
    broker.waitUntilExit()
    try? FileManager.default.removeItem(at: directory)
}
print("publish throughput, \(count) messages of \(payload.count) bytes per run, window \(window), mosquitto on :\(port)")
for qos in QoS.allCases {
    let c = try benchC(port: port, qos: qos, count: count)
    let swift = try await benchSwift(port: port, qos: qos, count: count)
    print(
        String(
            format: "QoS %d: Swift API %9.0f msgs/s | C API %9.0f msgs/s | Swift/C %.2f", Int(qos.rawValue), swift, c,
            swift / c))
}
