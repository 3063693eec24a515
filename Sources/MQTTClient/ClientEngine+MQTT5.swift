import CMosquitto
import Foundation
import MQTTCore

/// The MQTT 5-only operations: SUBSCRIBE with several filters, and request/response over the client's inbox.
extension ClientEngine {
    /// One SUBSCRIBE for several filters (one QoS and option set for all): one result per filter, in order.
    func subscribe(filters: [String], qos: QoS, options: MQTTSubscribeOptions) async throws(MQTTClientError)
        -> [MQTTSubscribeResult]
    {
        guard !filters.isEmpty else { return [] }
        for filter in filters where mosquitto_sub_topic_check2(filter, filter.utf8.count) != MosquittoError.success {
            throw .invalidTopic(filter)
        }
        guard isV5 || options.isDefault else { throw .mqtt5Required("subscribe options") }
        let propertyList = try PropertyList(subscribe: options)
        let completion = await withCheckedContinuation { (waiter: Waiter) in
            switch core.withLock({ $0.machine.admitSubscription() }) {
            case .failure(let error):
                waiter.resume(returning: .failed(error))
            case .success(let epoch):
                var mid: Int32 = 0
                let copies = filters.map { strdup($0) }
                defer { copies.forEach { free($0) } }
                let rc = copies.withUnsafeBufferPointer { pointers in
                    mosquitto_subscribe_multiple(
                        handle.pointer, &mid, Int32(clamping: filters.count), pointers.baseAddress,
                        Int32(qos.rawValue), options.optionBits, propertyList.pointer)
                }
                poller.wake()
                guard rc == MosquittoError.success else {
                    waiter.resume(returning: .failed(MosquittoError.operationError(rc)))
                    return
                }
                let subscriptions = filters.map { TopicSubscription(filter: $0, qos: qos, options: options) }
                feed { $0.subscribeSent(mid: mid, subscriptions: subscriptions, epoch: epoch, waiter: waiter) }
            }
        }
        switch completion {
        case .subscribed(let results): return results
        case .granted(let granted): return [.granted(granted)]
        case .done: return filters.map { _ in .granted(qos) }
        case .failed(let error): throw error
        }
    }

    // MARK: Request/response

    /// The topic responses to this client's requests are published to: `<inbox>/reply`.
    var replyTopic: String {
        if let inbox = configuration.inboxTopic { return inbox + "/reply" }
        let clientID =
            configuration.clientID.isEmpty ? (connAck?.assignedClientIdentifier ?? "") : configuration.clientID
        return "mqttchat/users/\(clientID)/inbox/reply"
    }

    func request(
        topic: String, payload: [UInt8], qos: QoS, properties: MQTTPublishProperties, timeout: Duration
    ) async throws(MQTTClientError) -> MQTTMessage {
        guard isV5 else { throw .mqtt5Required("request/response") }
        guard mosquitto_pub_topic_check2(topic, topic.utf8.count) == MosquittoError.success else {
            throw .invalidTopic(topic)
        }
        let responseTopic = replyTopic
        try await ensureSubscribed(responseTopic)
        let correlation = try requests.withLock { $0.reserve() }.get()
        var properties = properties
        properties.responseTopic = responseTopic
        properties.correlationData = correlation
        let timer = Task { [requests] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            if case .resume(let waiter) = requests.withLock({ $0.resolve(correlation, with: .failure(.timeout)) }) {
                waiter.resume(returning: .failure(.timeout))
            }
        }
        // Not awaited here: the timeout also bounds a publish that waits (offline queue, slow PUBACK).
        Task { [properties] in
            do throws(MQTTClientError) {
                try await publish(topic: topic, payload: payload, qos: qos, retain: false, properties: properties)
            } catch {
                if case .resume(let waiter) = requests.withLock({ $0.resolve(correlation, with: .failure(error)) }) {
                    waiter.resume(returning: .failure(error))
                }
            }
        }
        let outcome = await withCheckedContinuation { (waiter: RequestWaiter) in
            if let ready = requests.withLock({ $0.wait(correlation, waiter: waiter) }) {
                waiter.resume(returning: ready)
            }
        }
        timer.cancel()
        return try outcome.get()
    }

    func respond(
        to request: MQTTMessage, payload: [UInt8], qos: QoS, properties: MQTTPublishProperties
    ) async throws(MQTTClientError) {
        guard isV5 else { throw .mqtt5Required("request/response") }
        guard let topic = request.properties.responseTopic else { throw .noResponseTopic }
        var properties = properties
        properties.correlationData = request.properties.correlationData
        try await publish(topic: topic, payload: payload, qos: qos, retain: false, properties: properties)
    }

    /// Subscribes to `filter` (QoS 1) unless a confirmed subscription exists; it is restored after reconnects.
    private func ensureSubscribed(_ filter: String) async throws(MQTTClientError) {
        let subscribed = core.withLock { core in core.machine.subscriptions.contains { $0.filter == filter } }
        if !subscribed { _ = try await subscribe(filter, qos: .atLeastOnce, options: MQTTSubscribeOptions()) }
    }
}
