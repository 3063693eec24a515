import MQTTCore

/// SUBSCRIBE (MQTT 3.1.1 section 3.8): each filter bounded in depth, validated and checked against the ACL; the
/// subscription index changed; SUBACK with one return code per filter once durable, then the retained messages
/// that match (MQTT-3.3.1-6).
enum SubscribeHandler {
    /// The number of levels in a topic filter ("a/b/#" has 3).
    static func levelCount(of filter: String) -> Int {
        filter.utf8.reduce(1) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 }
    }

    static func handle(_ subscribe: SubscribePacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        var returnCodes: [SubAckReturnCode] = []
        var accepted: [(filter: String, qos: QoS)] = []
        returnCodes.reserveCapacity(subscribe.subscriptions.count)
        // A filter deeper than max_topic_levels is hostile input: mosquitto closes the connection rather than
        // refusing the filter. The subscription index is as deep as the deepest filter, so bounding the depth
        // bounds the work (and the recursion) of every later match and removal.
        for request in subscribe.subscriptions {
            let levels = levelCount(of: request.topicFilter)
            guard levels <= core.configuration.maxTopicLevels else {
                connection.close(.protocolViolation(.tooManyTopicLevels(levels)))
                return
            }
        }
        for request in subscribe.subscriptions {
            guard let refusal = refusal(of: request.topicFilter, session: session, core: core) else {
                let granted = min(request.qos, core.configuration.maxQoS)
                core.subscribe(session, to: request.topicFilter, qos: granted)
                returnCodes.append(.granted(granted))
                accepted.append((request.topicFilter, granted))
                connection.logger.debug(
                    "subscribed", metadata: ["filter": "\(request.topicFilter)", "qos": "\(granted.rawValue)"])
                continue
            }
            connection.logger.notice("SUBSCRIBE refused", metadata: ["filter": "\(request.topicFilter)", "reason": "\(refusal)"])
            returnCodes.append(.failure)
        }
        core.storage.whenDurable {
            connection.write(.suback(SubAckPacket(packetID: subscribe.packetID, returnCodes: returnCodes)))
            for (filter, qos) in accepted {
                core.deliverRetained(matching: filter, grantedQoS: qos, to: session)
            }
        }
    }

    /// Why `filter` is refused, or nil when it may be subscribed to.
    private static func refusal(of filter: String, session: BrokerSession, core: BrokerCore) -> String? {
        do {
            try MQTTTopic.validateFilter(filter)
        } catch {
            return "\(error)"
        }
        // The whole filter must be readable (ClientAccessPolicy.maySubscribe).
        guard session.accessPolicy.maySubscribe(to: filter) else { return "acl denies read" }
        return nil
    }
}
