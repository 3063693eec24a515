// Receive throughput: one C API publisher (benchC) sends messages through mosquitto to one subscriber, either
// libmosquitto's C API (counting in on_message) or MQTTClient (counting from `messages()`), at the same QoS. The
// clock runs from the first publish to the last message counted; the publisher's CPU is in both runs alike.
import CMosquitto
import Foundation
import MQTTClient
import MQTTCore

/// How long a receive run may take before it counts as lost messages.
let receiveDeadline = Duration.seconds(30)

func receiveTopic() -> String { "bench/receive/\(nextClientID("topic"))" }

/// Runs the C API publisher on a thread of its own: it blocks on semaphores, and must not take one of the few
/// threads of Swift's cooperative pool from the receiver being measured.
func publishOnThread(port: Int, qos: QoS, count: Int, v5: Bool, topic: String) async throws {
    let result: Result<Double, any Error> = await withCheckedContinuation { continuation in
        Thread {
            let result = Result { try benchC(port: port, qos: qos, count: count, v5: v5, topic: topic) }
            continuation.resume(returning: result)
        }.start()
    }
    _ = try result.get()
}

func benchReceiveSwift(port: Int, qos: QoS, count: Int, v5: Bool) async throws -> Double {
    var configuration = MQTTClientConfiguration(clientID: nextClientID("swift-sub"), port: port)
    configuration.protocolVersion = v5 ? .v5 : .v3_1_1
    configuration.maxInflightMessages = 100
    let client = try MQTTClient(configuration: configuration)
    try await client.connect()
    let topic = receiveTopic()
    let messages = client.messages(matching: topic)
    try await client.subscribe(topic, qos: qos)
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await publishOnThread(port: port, qos: qos, count: count, v5: v5, topic: topic) }
        group.addTask {
            var received = 0
            for await _ in messages {
                received += 1
                if received == count { return }
            }
            throw CError("the message stream ended after \(received) of \(count)")
        }
        group.addTask {
            try await Task.sleep(for: receiveDeadline)
            throw CError("messages missing after \(receiveDeadline)")
        }
        try await group.next()
        try await group.next()  // the publisher and the counter both finish, or the deadline throws
        group.cancelAll()
    }
    let elapsed = start.duration(to: .now)
    await client.disconnect()
    return Double(count) / seconds(elapsed)
}

/// Subscribes once connected and counts deliveries, all on libmosquitto's loop thread, as mosquitto_sub does.
/// `@unchecked Sendable`: semaphores are thread-safe, `topic` and `qos` are set before the loop starts, and
/// `received` is only touched on the loop thread (read after `finished`, or for an error message).
final class CReceiveContext: @unchecked Sendable {
    let subscribed = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    var topic = ""
    var qos: Int32 = 0
    var received = 0
    var expected = 0
}

func benchReceiveC(port: Int, qos: QoS, count: Int, v5: Bool) throws -> Double {
    let context = CReceiveContext()
    context.expected = count
    context.topic = receiveTopic()
    context.qos = Int32(qos.rawValue)
    guard let mosq = mosquitto_new(nextClientID("c-sub"), true, Unmanaged.passUnretained(context).toOpaque())
    else { throw CError("mosquitto_new failed") }
    defer { mosquitto_destroy(mosq) }
    mosquitto_max_inflight_messages_set(mosq, 100)
    // As MQTTClient does: with libmosquitto's default of 20 a burst of QoS 2 stalls the subscriber.
    mosquitto_int_option(mosq, MOSQ_OPT_RECEIVE_MAXIMUM, 65535)
    if v5 { mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5) }
    mosquitto_connect_callback_set(mosq) { mosq, user, _ in
        guard let user else { return }
        let context = Unmanaged<CReceiveContext>.fromOpaque(user).takeUnretainedValue()
        mosquitto_subscribe(mosq, nil, context.topic, context.qos)
    }
    mosquitto_subscribe_callback_set(mosq) { _, user, _, _, _ in
        guard let user else { return }
        Unmanaged<CReceiveContext>.fromOpaque(user).takeUnretainedValue().subscribed.signal()
    }
    mosquitto_message_callback_set(mosq) { mosq, user, _ in
        guard let user else { return }
        let context = Unmanaged<CReceiveContext>.fromOpaque(user).takeUnretainedValue()
        context.received += 1
        if context.received == context.expected {
            mosquitto_disconnect(mosq)
            context.finished.signal()
        }
    }
    guard mosquitto_connect(mosq, "127.0.0.1", Int32(port), 60) == 0 else { throw CError("connect failed") }
    // Everything on the loop thread, as mosquitto_sub does it.
    let loopEnded = DispatchSemaphore(value: 0)
    nonisolated(unsafe) let handle = mosq
    Thread {
        mosquitto_loop_forever(handle, 1000, 1)
        loopEnded.signal()
    }.start()
    defer {
        if loopEnded.wait(timeout: .now()) != .success {  // only after a failure: the loop is still running
            mosquitto_disconnect(mosq)
            _ = loopEnded.wait(timeout: .now() + 10)
        }
    }
    guard context.subscribed.wait(timeout: .now() + 5) == .success else { throw CError("no SUBACK") }
    let start = ContinuousClock.now
    _ = try benchC(port: port, qos: qos, count: count, v5: v5, topic: context.topic)
    let deadline = DispatchTime.now() + .seconds(Int(receiveDeadline.components.seconds))
    guard context.finished.wait(timeout: deadline) == .success else {
        throw CError("C API receiver: \(context.received) of \(count) messages after \(receiveDeadline)")
    }
    let elapsed = start.duration(to: .now)
    _ = loopEnded.wait(timeout: .now() + 10)
    return Double(count) / seconds(elapsed)
}
