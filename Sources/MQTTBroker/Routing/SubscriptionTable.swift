import MQTTCore

/// Who subscribes to what: the subscription index (ordinary filters), the shared subscription groups
/// (`$share/GROUP/FILTER`), and each session's own list of filters and MQTT 5 options, kept in step. What must
/// survive a restart is the core's to record; this type only answers routing's questions.
///
/// Confined to the core's event loop, like the rest of the routing state.
final class SubscriptionTable {
    /// Ordinary filters, matched by routing on every message.
    let index = SubscriptionIndex<SessionKey>()
    /// Shared subscription groups, one delivery per group (MQTT 5.0 4.8.2).
    let shared = SharedSubscriptions()

    /// The number of (session, filter) subscriptions, shared ones included.
    var count: Int { index.count + shared.count }

    /// Adds or replaces `session`'s subscription to `filter` (re-subscribing replaces the QoS, MQTT-3.8.4-3).
    func add(_ session: BrokerSession, filter: String, qos: QoS) {
        session.subscriptions[UTF8Key(filter)] = qos
        if let group = SharedFilter(filter) {
            shared.subscribe(session.key, to: group, qos: qos)
        } else {
            index.subscribe(session.key, to: filter, qos: qos)
        }
    }

    /// Removes `session`'s subscription to `filter`, options included; false when there was none.
    func remove(_ session: BrokerSession, filter: String) -> Bool {
        guard session.subscriptions.removeValue(forKey: UTF8Key(filter)) != nil else { return false }
        session.subscriptionOptions[UTF8Key(filter)] = nil
        unindex(session, filter: filter)
        return true
    }

    /// Removes every subscription of `session` (its session ends).
    func removeAll(of session: BrokerSession) {
        for filter in session.subscriptions.keys {
            unindex(session, filter: filter.base)
        }
        session.subscriptions.removeAll()
        session.subscriptionOptions.removeAll()
    }

    /// Whether any session subscribes to a filter matching `topic`. `hint` is the publisher's route hint, as
    /// routing uses it right after.
    func hasSubscriber(matching topic: String, hint: inout RouteCache<SessionKey>.Hint?) -> Bool {
        var found = false
        index.forEachMatch(topic: topic, hint: &hint) { _, _ in found = true }
        return found || (!shared.isEmpty && shared.hasGroup(matching: topic))
    }

    private func unindex(_ session: BrokerSession, filter: String) {
        if let group = SharedFilter(filter) {
            shared.unsubscribe(session.key, from: group)
        } else {
            index.unsubscribe(session.key, from: filter)
        }
    }
}
