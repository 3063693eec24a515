// Publish and receive throughput: MQTTClient (Swift API) versus libmosquitto's C API called directly, both against
// a mosquitto started here, at MQTT 3.1.1 and 5, QoS 0/1/2 (receiving: Receive.swift). Each round runs the C API,
// then the Swift API; the tables give the medians over the rounds (the two cores are shared with the broker, so
// single runs scatter widely).
// Usage: MQTTClientBench [--count N] [--rounds R] [--qos 0|1|2] [--protocol 3|5] [--direction publish|receive|both]
// [--only swift|c] [--task-per-message]
// (N messages per run, default 50000; R rounds, default 5; publishing only unless --direction says otherwise;
// about a minute per direction in release).
// Build: swift build --package-path Benchmarks -c release --static-swift-stdlib --scratch-path .build-bench-release
//   --product MQTTClientBench
import CMosquitto
import Foundation
import MQTTClient
import MQTTCore

nonisolated(unsafe) var runs = 0

/// A client id of its own for each run: the broker may not have closed the previous run's connection yet.
func nextClientID(_ api: String) -> String {
    runs += 1
    return "bench-\(api)-\(runs)"
}

/// Messages a run may have unacknowledged at once, for both APIs.
let window = 1000
let payload = [UInt8](repeating: 0x42, count: 64)

/// The argument after `flag` on the command line, if any.
func stringArgument(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// The positive integer after `flag` on the command line, if any.
func intArgument(_ flag: String) -> Int? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count, let value = Int(arguments[index + 1]),
        value >= 0
    else { return nil }
    return value
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

/// QoS 0 is published from one loop, as a caller would: `publish` returns once the message is queued and waits only
/// while `window` messages are unwritten (`qos0QueueLimit`), the bound the C API run keeps with its semaphore. At QoS
/// 1 and 2 each `publish` waits for its acknowledgement, so `window` tasks publish in turn (`--task-per-message`:
/// a new task per message instead, at most `window` at once). Both APIs stop the clock after DISCONNECT, which
/// libmosquitto writes after every message queued before it.
func benchSwift(port: Int, qos: QoS, count: Int, v5: Bool) async throws -> Double {
    var configuration = MQTTClientConfiguration(clientID: nextClientID("swift"), port: port)
    configuration.protocolVersion = v5 ? .v5 : .v3_1_1
    configuration.maxInflightMessages = 100
    configuration.qos0QueueLimit = window
    let client = try MQTTClient(configuration: configuration)
    try await client.connect()
    let start = ContinuousClock.now
    if qos == .atMostOnce {
        for _ in 0..<count { try await client.publish(topic: "bench/swift", payload: payload, qos: qos) }
    } else if CommandLine.arguments.contains("--task-per-message") {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                if index >= window { try await group.next() }
                group.addTask { try await client.publish(topic: "bench/swift", payload: payload, qos: qos) }
            }
            try await group.waitForAll()
        }
    } else {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<window {
                let share = count / window + (worker < count % window ? 1 : 0)
                group.addTask {
                    for _ in 0..<share { try await client.publish(topic: "bench/swift", payload: payload, qos: qos) }
                }
            }
            try await group.waitForAll()
        }
    }
    await client.disconnect()
    return Double(count) / seconds(start.duration(to: .now))
}

// MARK: C API

/// Counts acknowledgements on libmosquitto's thread. `@unchecked Sendable`: semaphores are thread-safe and
/// `acknowledged` is only touched under `lock`.
final class CBenchContext: @unchecked Sendable {
    let slots = DispatchSemaphore(value: window)
    let connected = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let disconnected = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var acknowledged = 0
    var expected = 0
}

func benchC(port: Int, qos: QoS, count: Int, v5: Bool, topic: String = "bench/c") throws -> Double {
    let context = CBenchContext()
    context.expected = count
    guard let mosq = mosquitto_new(nextClientID("c"), true, Unmanaged.passUnretained(context).toOpaque())
    else { throw CError("mosquitto_new failed") }
    defer { mosquitto_destroy(mosq) }
    mosquitto_max_inflight_messages_set(mosq, 100)
    if v5 { mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5) }
    mosquitto_connect_callback_set(mosq) { _, user, _ in
        guard let user else { return }
        Unmanaged<CBenchContext>.fromOpaque(user).takeUnretainedValue().connected.signal()
    }
    mosquitto_disconnect_callback_set(mosq) { _, user, _ in
        guard let user else { return }
        Unmanaged<CBenchContext>.fromOpaque(user).takeUnretainedValue().disconnected.signal()
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
            mosquitto_publish(mosq, nil, topic, Int32($0.count), $0.baseAddress, Int32(qos.rawValue), false)
        }
        guard rc == 0 else { throw CError("publish failed: \(rc)") }
    }
    guard context.finished.wait(timeout: .now() + 120) == .success else { throw CError("acks missing") }
    mosquitto_disconnect(mosq)
    guard context.disconnected.wait(timeout: .now() + 10) == .success else { throw CError("no disconnect") }
    return Double(count) / seconds(start.duration(to: .now))
}

struct CError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// CPU time (user + system) this process has used so far, in seconds: the client's own cost, apart from the broker's.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) * 1e-6
    let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) * 1e-6
    return user + system
}

/// Runs `body` (which returns messages per second) and adds the CPU microseconds this process spent per message.
func measured(count: Int, _ body: () async throws -> Double) async rethrows -> (rate: Double, cpuMicroseconds: Double) {
    let before = processCPUSeconds()
    let rate = try await body()
    return (rate, (processCPUSeconds() - before) * 1e6 / Double(count))
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Runs every protocol version and QoS level `rounds` times through both APIs, alternating, and prints medians:
/// publishing, or with `receive` receiving.
func runTable(port: Int, count: Int, rounds: Int, levels: [QoS], versions: [Bool], receive: Bool) async throws {
    print(receive ? "\nreceive (a C API publisher sends, the API measured subscribes):" : "\npublish:")
    print("| MQTT | QoS | Swift API msg/s | C API msg/s | Swift/C | client CPU µs/msg Swift | C | Swift/C per round |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for v5 in versions {
        for qos in levels {
            var swift: [(rate: Double, cpuMicroseconds: Double)] = []
            var c: [(rate: Double, cpuMicroseconds: Double)] = []
            for _ in 0..<rounds {
                c.append(
                    try await measured(count: count) {
                        receive
                            ? try benchReceiveC(port: port, qos: qos, count: count, v5: v5)
                            : try benchC(port: port, qos: qos, count: count, v5: v5)
                    })
                swift.append(
                    try await measured(count: count) {
                        receive
                            ? try await benchReceiveSwift(port: port, qos: qos, count: count, v5: v5)
                            : try await benchSwift(port: port, qos: qos, count: count, v5: v5)
                    })
            }
            let ratios = zip(swift, c).map { String(format: "%.2f", $0.rate / $1.rate) }.joined(separator: " ")
            let swiftRate = median(swift.map(\.rate))
            let cRate = median(c.map(\.rate))
            print(
                String(
                    format: "| %@ | %d | %.0f | %.0f | %.2f | %.2f | %.2f | %@ |", v5 ? "5" : "3.1.1",
                    Int(qos.rawValue), swiftRate, cRate, swiftRate / cRate, median(swift.map(\.cpuMicroseconds)),
                    median(c.map(\.cpuMicroseconds)), ratios))
        }
    }
}

/// One API alone (`api` is "swift" or "c"), for profiling.
func runOne(_ api: String, port: Int, count: Int, levels: [QoS], versions: [Bool]) async throws {
    for v5 in versions {
        for qos in levels {
            let receive = stringArgument("--direction") == "receive"
            let result =
                api == "c"
                ? try await measured(count: count) {
                    receive
                        ? try benchReceiveC(port: port, qos: qos, count: count, v5: v5)
                        : try benchC(port: port, qos: qos, count: count, v5: v5)
                }
                : try await measured(count: count) {
                    receive
                        ? try await benchReceiveSwift(port: port, qos: qos, count: count, v5: v5)
                        : try await benchSwift(port: port, qos: qos, count: count, v5: v5)
                }
            print(
                String(
                    format: "MQTT %@ QoS %d: %@ API %9.0f msgs/s, client CPU µs/msg %.2f", v5 ? "5" : "3.1.1",
                    Int(qos.rawValue), api, result.rate, result.cpuMicroseconds))
        }
    }
}

// MARK: Main

let count = intArgument("--count") ?? 50_000
let rounds = max(intArgument("--rounds") ?? 5, 1)
let levels = intArgument("--qos").flatMap { QoS(rawValue: UInt8(clamping: $0)) }.map { [$0] } ?? QoS.allCases
let versions = intArgument("--protocol").map { [$0 == 5] } ?? [false, true]
mosquitto_lib_init()
let port = freePort()
let (broker, directory) = try startMosquitto(port: port)
defer {
    broker.terminate()
    broker.waitUntilExit()
    try? FileManager.default.removeItem(at: directory)
}
print("publish throughput, \(count) messages of \(payload.count) bytes per run, window \(window), mosquitto on :\(port)")
if let only = stringArgument("--only") {
    try await runOne(only, port: port, count: count, levels: levels, versions: versions)
} else {
    let direction = stringArgument("--direction") ?? "publish"
    for receive in [false, true] where direction == "both" || direction == (receive ? "receive" : "publish") {
        try await runTable(
            port: port, count: count, rounds: rounds, levels: levels, versions: versions, receive: receive)
    }
}
