import MQTTCore

/// SUBSCRIBE / UNSUBSCRIBE bookkeeping: pending acknowledgements and the confirmed subscriptions that are restored
/// (with their QoS and MQTT 5 options) after a reconnect without session.
extension ClientStateMachine {
    /// Whether SUBSCRIBE / UNSUBSCRIBE may be sent now: the current epoch, or the error to throw.
    func admitSubscription() -> Result<Int, MQTTClientError> {
        phase == .connected ? .success(epoch) : .failure(.notConnected)
    }

    /// SUBSCRIBE for one filter went out under `mid`; `waiter` is `nil` for restored subscriptions.
    mutating func subscribeSent(mid: Int32, subscription: TopicSubscription, epoch admittedEpoch: Int, waiter: Waiter?)
        -> [Action]
    {
        subscribeSent(
            mid: mid, pending: PendingSubscribe(subscriptions: [subscription], multiple: false, waiter: waiter),
            epoch: admittedEpoch)
    }

    /// SUBSCRIBE for several filters (one QoS and option set for all) went out under `mid`; the caller gets one
    /// ``MQTTSubscribeResult`` per filter.
    mutating func subscribeSent(
        mid: Int32, subscriptions: [TopicSubscription], epoch admittedEpoch: Int, waiter: Waiter
    ) -> [Action] {
        subscribeSent(
            mid: mid, pending: PendingSubscribe(subscriptions: subscriptions, multiple: true, waiter: waiter),
            epoch: admittedEpoch)
    }

    private mutating func subscribeSent(mid: Int32, pending: PendingSubscribe, epoch admittedEpoch: Int) -> [Action] {
        if let granted = earlySubAcks.removeValue(forKey: mid) {
            return complete(pending, granted: granted)
        }
        guard admittedEpoch == epoch else {
            return pending.waiter.map { [.resume($0, .failed(.notConnected))] } ?? []
        }
        subscribes[mid] = pending
        return []
    }

    /// `on_subscribe`: SUBACK with one code per filter: the granted QoS, or a failure (0x80 at 3.1.1, any MQTT 5
    /// reason code ≥ 0x80 at 5).
    mutating func subackReceived(mid: Int32, granted: [Int32]) -> [Action] {
        guard let pending = subscribes.removeValue(forKey: mid) else {
            earlySubAcks[mid] = granted
            return []
        }
        return complete(pending, granted: granted)
    }

    /// UNSUBSCRIBE went out under `mid`.
    mutating func unsubscribeSent(mid: Int32, filter: String, epoch admittedEpoch: Int, waiter: Waiter) -> [Action] {
        if earlyUnsubAcks.remove(mid) != nil {
            subscriptions.removeAll { $0.filter == filter }
            return [.resume(waiter, .done)]
        }
        guard admittedEpoch == epoch else { return [.resume(waiter, .failed(.notConnected))] }
        unsubscribes[mid] = PendingUnsubscribe(filter: filter, waiter: waiter)
        return []
    }

    /// `on_unsubscribe`: UNSUBACK received.
    mutating func unsubackReceived(mid: Int32) -> [Action] {
        guard let pending = unsubscribes.removeValue(forKey: mid) else {
            earlyUnsubAcks.insert(mid)
            return []
        }
        subscriptions.removeAll { $0.filter == pending.filter }
        return [.resume(pending.waiter, .done)]
    }

    /// Records the granted filters (a refused restore drops its subscription) and answers the caller.
    private mutating func complete(_ pending: PendingSubscribe, granted: [Int32]) -> [Action] {
        var results: [MQTTSubscribeResult] = []
        for (index, subscription) in pending.subscriptions.enumerated() {
            // A SUBACK shorter than the SUBSCRIBE is a protocol error; treat the missing entries as refusals.
            let result = MQTTSubscribeResult(code: index < granted.count ? granted[index] : 0x80)
            results.append(result)
            switch result {
            case .granted:
                if let existing = subscriptions.firstIndex(where: { $0.filter == subscription.filter }) {
                    subscriptions[existing] = subscription
                } else {
                    subscriptions.append(subscription)
                }
            case .refused:
                subscriptions.removeAll { $0.filter == subscription.filter }
            }
        }
        guard let waiter = pending.waiter else { return [] }
        if pending.multiple { return [.resume(waiter, .subscribed(results))] }
        switch results.first {
        case .granted(let qos):
            return [.resume(waiter, .granted(qos))]
        case .refused(let code) where code.rawValue != 0x80:
            return [.resume(waiter, .failed(.failure(reasonCode: code.rawValue, reasonString: nil)))]
        case .refused, nil:
            let filter = pending.subscriptions.first?.filter ?? ""
            return [.resume(waiter, .failed(.subscriptionRefused(filter: filter)))]
        }
    }
}
