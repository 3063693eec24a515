import MQTTCore

/// Publishing: admission (offline queue for QoS 1/2, a bounded send queue for QoS 0), hand-over to libmosquitto and
/// acknowledgements.
///
/// A QoS 0 publish returns once libmosquitto has queued the message, as `mosquitto_publish` itself does: it has no
/// acknowledgement to wait for, and waiting for the write would cost a thread wake-up per message. What bounds the
/// queue is `qos0QueueLimit`: beyond it a QoS 0 publish waits for room, which each written (or lost) message hands
/// to the longest waiter.
extension ClientStateMachine {
    /// Decides whether a publish may go to libmosquitto; reserves an offline slot (QoS 1/2) or a place in the send
    /// queue (QoS 0) when needed. `holdingRoom`: a QoS 0 caller that `waitForRoom(_:)` resumed holds a place already.
    mutating func admitPublish(qos: QoS, holdingRoom: Bool = false) -> PublishAdmission {
        switch phase {
        case .connected:
            guard qos == .atMostOnce, !holdingRoom else { return .send(countsOffline: false, epoch: epoch) }
            guard unwrittenQoS0 < qos0QueueLimit else { return .waitForRoom }
            unwrittenQoS0 += 1
            return .send(countsOffline: false, epoch: epoch)
        case .idle, .connecting, .waitingToReconnect:
            if holdingRoom { return rejectHoldingRoom() }
            guard qos != .atMostOnce else { return .reject(.notConnected) }
            guard offlineQueued < offlineQueueLimit else { return .reject(.offlineQueueFull) }
            offlineQueued += 1
            return .send(countsOffline: true, epoch: epoch)
        case .disconnected, .disconnecting, .closed:
            return holdingRoom ? rejectHoldingRoom() : .reject(.notConnected)
        }
    }

    /// A QoS 0 publish found the send queue full: `waiter` resumes (with `.done`) holding a place, at once if one
    /// has come free since.
    mutating func waitForRoom(_ waiter: Waiter) -> [Action] {
        guard phase == .connected else { return [.resume(waiter, .failed(.notConnected))] }
        guard unwrittenQoS0 >= qos0QueueLimit else {
            unwrittenQoS0 += 1
            return [.resume(waiter, .done)]
        }
        roomWaiters.append(waiter)
        return []
    }

    /// libmosquitto accepted the message under `mid`; `queuedOffline` when it answered "no connection" for QoS 1/2
    /// (the library keeps such messages and sends them after the reconnect — we never send them again ourselves).
    /// `waiter` is `nil` at QoS 0, whose caller learns the outcome from the returned error instead.
    mutating func publishHandedOver(
        mid: Int32, qos: QoS, countsOffline: Bool, queuedOffline: Bool, epoch admittedEpoch: Int, waiter: Waiter?
    ) -> (error: MQTTClientError?, actions: [Action]) {
        let counted = countsOffline || queuedOffline
        if queuedOffline && !countsOffline { offlineQueued += 1 }
        if let early = earlyPublishAcks.removeValue(forKey: mid) {
            if counted { offlineQueued -= 1 }
            guard let waiter else { return (nil, releaseRoom()) }
            return (nil, [.resume(waiter, early)])
        }
        // The socket closed between admission and now: a QoS 0 packet died with it; QoS 1/2 messages stay queued
        // in libmosquitto unless no reconnect will come.
        let final = phase == .disconnected || phase == .closed || phase == .disconnecting
        if (qos == .atMostOnce && admittedEpoch != epoch) || final {
            if counted { offlineQueued -= 1 }
            let actions = qos == .atMostOnce ? releaseRoom() : []
            guard let waiter else { return (.notConnected, actions) }
            return (nil, actions + [.resume(waiter, .failed(.notConnected))])
        }
        publishes[mid] = PendingPublish(qos: qos, countsOffline: counted, waiter: waiter)
        return (nil, [])
    }

    /// libmosquitto refused the message outright; releases the offline slot or send-queue place taken by
    /// `admitPublish`.
    mutating func publishRejected(qos: QoS, countsOffline: Bool) -> [Action] {
        if countsOffline { offlineQueued -= 1 }
        return qos == .atMostOnce ? releaseRoom() : []
    }

    /// `on_publish`: QoS 0 written, QoS 1 PUBACK or QoS 2 PUBCOMP received, or (MQTT 5) a PUBACK / PUBREC with a
    /// failure `reasonCode` (≥ 0x80), which fails the publish. 0x10 "no matching subscribers" is a success.
    mutating func publishAcknowledged(mid: Int32, reasonCode: Int32 = 0, reasonString: String? = nil) -> [Action] {
        let completion: Completion =
            reasonCode >= 0x80
            ? .failed(.failure(reasonCode: UInt8(truncatingIfNeeded: reasonCode), reasonString: reasonString))
            : .done
        guard let pending = publishes.removeValue(forKey: mid) else {
            earlyPublishAcks[mid] = completion
            return []
        }
        if pending.countsOffline { offlineQueued -= 1 }
        if pending.qos == .atMostOnce { return releaseRoom() }
        return pending.waiter.map { [.resume($0, completion)] } ?? []
    }

    /// A QoS 0 message left the send queue (written, lost with the socket, or refused): its place goes to the
    /// longest waiter, or back to the pool.
    mutating func releaseRoom() -> [Action] {
        guard !roomWaiters.isEmpty else {
            unwrittenQoS0 -= 1
            return []
        }
        return [.resume(roomWaiters.removeFirst(), .done)]
    }

    /// A caller resumed holding a place found the connection gone: it fails and the place is free again. Nobody
    /// waits for it: losing the connection failed every waiter (`failRoomWaiters`).
    private mutating func rejectHoldingRoom() -> PublishAdmission {
        unwrittenQoS0 -= 1
        return .reject(.notConnected)
    }

    /// The connection is gone: QoS 0 publishes waiting for room fail, as they would have on admission.
    mutating func failRoomWaiters(with error: MQTTClientError) -> [Action] {
        defer { roomWaiters = [] }
        return roomWaiters.map { .resume($0, .failed(error)) }
    }
}
