import MQTTCore

/// What an MQTT 5 subscription asked for beyond its QoS (MQTT 5.0 3.8.3.1, 3.8.2.1.2). A session keeps these only
/// for filters subscribed with something other than the defaults, so 3.1.1 sessions and plain v5 subscriptions
/// cost nothing extra on the message path.
struct SubscriptionOptions: Sendable, Hashable {
    /// No Local: the session's own publications are not sent back to it on this filter.
    var noLocal = false
    /// Retain As Published: forwarded messages keep the RETAIN flag they were published with.
    var retainAsPublished = false
    /// The Subscription Identifier, sent with every message this filter delivers.
    var identifier: Int?

    /// Whether these are the defaults (nothing to keep).
    var isDefault: Bool { !noLocal && !retainAsPublished && identifier == nil }
}

/// How one message is delivered to one MQTT 5 session whose subscriptions carry options: the subscriptions that
/// match, less those that exclude the publisher (No Local), decide the QoS, the RETAIN flag and the identifiers
/// (MQTT 5.0 3.3.4: one copy per session, with every matching subscription's identifier).
struct SubscriptionMatch: Sendable, Hashable {
    /// The highest QoS granted among the matching subscriptions.
    var grantedQoS: QoS
    /// Whether a matching subscription asked for Retain As Published.
    var retainAsPublished: Bool
    /// The identifiers of the matching subscriptions, in no particular order.
    var identifiers: [Int]

    /// The delivery `topic` gets from `subscriptions` with their `options`; nil when none of them delivers it
    /// (every match is No Local and the session published it itself).
    static func resolve(
        topic: String, subscriptions: [UTF8Key<String>: QoS], options: [UTF8Key<String>: SubscriptionOptions],
        publishedBySameSession: Bool
    ) -> SubscriptionMatch? {
        var match: SubscriptionMatch?
        // Shared subscriptions deliver on their own, one member per group (SharedSubscriptions).
        for (filter, qos) in subscriptions
        where !SharedFilter.isShared(filter.base) && MQTTTopic.matches(filter: filter.base, topic: topic) {
            let filterOptions = options[filter] ?? SubscriptionOptions()
            if filterOptions.noLocal && publishedBySameSession { continue }
            var current = match ?? SubscriptionMatch(grantedQoS: qos, retainAsPublished: false, identifiers: [])
            current.grantedQoS = max(current.grantedQoS, qos)
            current.retainAsPublished = current.retainAsPublished || filterOptions.retainAsPublished
            if let identifier = filterOptions.identifier { current.identifiers.append(identifier) }
            match = current
        }
        return match
    }
}
