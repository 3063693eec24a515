import MQTTCore

/// Shared subscriptions in routing (MQTT 5.0 4.8.2): every group whose filter matches gets one copy, for the
/// member whose turn it is, with that member's options.
extension BrokerCore {
    func deliverShared(_ message: BrokerMessage, _ context: Version5Route, recorder: inout RouteRecorder?) {
        var sharedQoS0V5: PublishEncoding.Encoded?
        subscriptions.shared.forEachDelivery(topic: message.topic) { key in
            guard let session = sessions.session(forKey: key), session.accessPolicy.mayReceive(message.topic) else {
                return .excluded
            }
            if session.connection != nil { return .online }
            return session.cleanSession ? .excluded : .offline
        } _: { shared, key, qos in
            guard let session = sessions.session(forKey: key) else { return }
            let filter = UTF8Key("$share/\(shared.group)/\(shared.filter)")
            let options = session.subscriptionOptions[filter] ?? SubscriptionOptions()
            let match = SubscriptionMatch(
                grantedQoS: qos, retainAsPublished: options.retainAsPublished,
                identifiers: options.identifier.map { [$0] } ?? [])
            deliver(message, match: match, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0V5)
        }
    }
}
