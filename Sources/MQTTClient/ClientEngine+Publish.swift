import CMosquitto
import MQTTCore

/// Publishing: QoS 1/2 wait for their acknowledgement through a continuation; QoS 0 returns once queued
/// (ClientStateMachine+Publishes.swift).
extension ClientEngine {
    func publish(
        topic: String, payload: [UInt8], qos: QoS, retain: Bool, properties: MQTTPublishProperties
    ) async throws(MQTTClientError) {
        guard mosquitto_pub_topic_check2(topic, topic.utf8.count) == MosquittoError.success else {
            throw .invalidTopic(topic)
        }
        guard isV5 || properties.isEmpty else { throw .mqtt5Required("publish properties") }
        let propertyList = try PropertyList(publish: properties)
        if qos == .atMostOnce {
            return try await publishAtMostOnce(topic: topic, payload: payload, retain: retain, properties: propertyList)
        }
        let completion = await withCheckedContinuation { (waiter: Waiter) in
            switch core.withLock({ $0.machine.admitPublish(qos: qos) }) {
            case .reject(let error):
                waiter.resume(returning: .failed(error))
            case .waitForRoom:  // only at QoS 0
                waiter.resume(returning: .failed(.protocolError("QoS 1/2 publish asked to wait for room")))
            case .send(let countsOffline, let epoch):
                let (rc, mid) = hand(topic, payload, qos, retain, propertyList)
                let queuedOffline = rc == MosquittoError.noConnection
                if rc == MosquittoError.success || queuedOffline {
                    feed {
                        $0.publishHandedOver(
                            mid: mid, qos: qos, countsOffline: countsOffline, queuedOffline: queuedOffline,
                            epoch: epoch, waiter: waiter
                        ).actions
                    }
                } else {
                    feed { $0.publishRejected(qos: qos, countsOffline: countsOffline) }
                    waiter.resume(returning: .failed(MosquittoError.operationError(rc)))
                }
            }
        }
        if case .failed(let error) = completion { throw error }
    }

    /// QoS 0: returns once libmosquitto has queued the message (see ClientStateMachine+Publishes.swift), without
    /// suspending unless `qos0QueueLimit` messages are still waiting to be written.
    private func publishAtMostOnce(
        topic: String, payload: [UInt8], retain: Bool, properties: borrowing PropertyList
    ) async throws(MQTTClientError) {
        var admission = core.withLock { $0.machine.admitPublish(qos: .atMostOnce) }
        if case .waitForRoom = admission {
            let completion = await withCheckedContinuation { (waiter: Waiter) in feed { $0.waitForRoom(waiter) } }
            if case .failed(let error) = completion { throw error }
            admission = core.withLock { $0.machine.admitPublish(qos: .atMostOnce, holdingRoom: true) }
        }
        switch admission {
        case .reject(let error):
            throw error
        case .waitForRoom:  // a caller holding room is never asked to wait
            throw .protocolError("QoS 0 publish asked to wait for room twice")
        case .send(_, let epoch):
            let (rc, mid) = hand(topic, payload, .atMostOnce, retain, properties)
            var failure: MQTTClientError?
            if rc == MosquittoError.success {
                feed { machine in
                    let (error, actions) = machine.publishHandedOver(
                        mid: mid, qos: .atMostOnce, countsOffline: false, queuedOffline: false, epoch: epoch,
                        waiter: nil)
                    failure = error
                    return actions
                }
            } else {
                feed { $0.publishRejected(qos: .atMostOnce, countsOffline: false) }
                failure = MosquittoError.operationError(rc)
            }
            if let failure { throw failure }
        }
    }

    /// Queues a message in libmosquitto and wakes the network thread to write it; returns libmosquitto's result and
    /// the message id it assigned.
    private func hand(
        _ topic: String, _ payload: [UInt8], _ qos: QoS, _ retain: Bool, _ properties: borrowing PropertyList
    ) -> (rc: Int32, mid: Int32) {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(
                handle.pointer, &mid, topic, Int32(clamping: bytes.count), bytes.baseAddress, Int32(qos.rawValue),
                retain, properties.pointer)
        }
        poller.wake()  // threaded mode only queues it: the network thread writes it
        return (rc, mid)
    }
}
