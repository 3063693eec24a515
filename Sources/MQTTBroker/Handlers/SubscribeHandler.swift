import MQTTCore

/// SUBSCRIBE (MQTT 3.1.1 section 3.8, MQTT 5.0 section 3.8): each filter bounded in depth, validated and checked
/// against the ACL; the subscription index changed (with the MQTT 5 options, ``SubscriptionOptions``); SUBACK with
/// one code per filter once durable, then the retained messages that match (MQTT-3.3.1-6), as Retain Handling asks.
enum SubscribeHandler {
    /// The number of levels in a topic filter ("a/b/#" has 3).
    static func levelCount(of filter: String) -> Int {
        filter.utf8.reduce(1) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 }
    }

    /// A filter that was subscribed, and whether its retained messages go out now.
    private struct Accepted {
        var filter: String
        var qos: QoS
        var sendsRetained: Bool
        var identifier: Int?
    }

    static func handle(_ subscribe: SubscribePacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        let version5 = connection.protocolVersion == .v5
        var reasonCodes: [MQTTReasonCode] = []
        var accepted: [Accepted] = []
        reasonCodes.reserveCapacity(subscribe.subscriptions.count)
        // A filter deeper than max_topic_levels is hostile input: mosquitto closes the connection rather than
        // refusing the filter. The subscription index is as deep as the deepest filter, so bounding the depth
        // bounds the work (and the recursion) of every later match and removal.
        for request in subscribe.subscriptions {
            let levels = levelCount(of: request.topicFilter)
            guard levels <= core.configuration.maxTopicLevels else {
                connection.close(.protocolViolation(.tooManyTopicLevels(levels)))
                return
            }
            // No Local on a shared subscription is a protocol error (MQTT-3.8.3-4).
            guard !(version5 && request.noLocal && SharedFilter.isShared(request.topicFilter)) else {
                connection.close(.protocolViolation(.noLocalOnSharedSubscription))
                return
            }
        }
        let identifier = version5 ? subscribe.properties.subscriptionIdentifiers.first : nil
        for request in subscribe.subscriptions {
            if let refusal = refusal(of: request.topicFilter, session: session, core: core, version5: version5) {
                connection.logger.notice(
                    "SUBSCRIBE refused", metadata: ["filter": "\(request.topicFilter)", "reason": "\(refusal.why)"])
                reasonCodes.append(version5 ? refusal.code : .unspecifiedError)
                continue
            }
            let granted = min(request.qos, core.configuration.maxQoS)
            let existed = session.subscriptions[UTF8Key(request.topicFilter)] != nil
            core.subscribe(session, to: request.topicFilter, qos: granted)
            // A bridge that announced itself (try_private) gets neither its own messages back nor lost RETAIN
            // flags, whatever its protocol, as in mosquitto; No Local does not apply to shared subscriptions.
            let bridge = connection.isBridgeClient && !SharedFilter.isShared(request.topicFilter)
            let options = SubscriptionOptions(
                noLocal: (version5 && request.noLocal) || bridge,
                retainAsPublished: (version5 && request.retainAsPublished) || bridge, identifier: identifier)
            session.subscriptionOptions[UTF8Key(request.topicFilter)] = options.isDefault ? nil : options
            core.storage.subscriptionOptionsChanged(session, filter: request.topicFilter, options: options)  // persistence hook
            let sendsRetained: Bool
            // A shared subscription gets no retained messages when it is made (MQTT 5.0 4.8.2).
            switch SharedFilter.isShared(request.topicFilter) ? .doNotSend : version5 ? request.retainHandling : .sendOnSubscribe {
            case .sendOnSubscribe: sendsRetained = true
            case .sendOnNewSubscription: sendsRetained = !existed
            case .doNotSend: sendsRetained = false
            }
            reasonCodes.append(MQTTReasonCode(rawValue: granted.rawValue))
            accepted.append(Accepted(filter: request.topicFilter, qos: granted, sendsRetained: sendsRetained, identifier: identifier))
            connection.logger.debug(
                "subscribed", metadata: ["filter": "\(request.topicFilter)", "qos": "\(granted.rawValue)"])
        }
        core.storage.whenDurable {
            connection.write(.suback(SubAckPacket(packetID: subscribe.packetID, reasonCodes: reasonCodes)))
            for subscription in accepted where subscription.sendsRetained {
                core.deliverRetained(
                    matching: subscription.filter, grantedQoS: subscription.qos, to: session,
                    identifier: subscription.identifier)
            }
        }
    }

    /// Why `filter` is refused, with the MQTT 5 reason code that says so; nil when it may be subscribed to.
    private static func refusal(
        of filter: String, session: BrokerSession, core: BrokerCore, version5: Bool
    ) -> (code: MQTTReasonCode, why: String)? {
        do {
            try MQTTTopic.validateFilter(filter)
        } catch {
            return (.topicFilterInvalid, "\(error)")
        }
        if SharedFilter.isShared(filter), SharedFilter(filter) == nil {
            return (.topicFilterInvalid, "a shared subscription needs $share/NAME/FILTER")
        }
        // The whole filter must be readable (ClientAccessPolicy.maySubscribe); for a shared subscription, the filter
        // its group shares, as mosquitto checks it ("$share/..." itself is no topic anyone is granted).
        let checked = SharedFilter(filter)?.filter ?? filter
        guard session.accessPolicy.maySubscribe(to: checked) else { return (.notAuthorized, "acl denies read") }
        return nil
    }
}
