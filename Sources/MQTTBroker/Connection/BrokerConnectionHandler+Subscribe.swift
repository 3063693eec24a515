import MQTTCore

/// SUBSCRIBE and UNSUBSCRIBE: each filter validated and checked against the ACL, the subscription trie
/// changed, then SUBACK / UNSUBACK once durable and the retained messages that match (MQTT 3.1.1 sections
/// 3.8–3.11). Runs on the core's event loop.
extension BrokerConnectionHandler {
    /// The number of levels in a topic filter ("a/b/#" has 3).
    static func levelCount(of filter: String) -> Int {
        filter.utf8.reduce(1) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 }
    }

    /// SUBSCRIBE: one return code per filter (refused when invalid, too deep or denied by the ACL).
    func handleSubscribe(_ subscribe: SubscribePacket) {
        guard let session = attachedSession() else { return }
        var returnCodes: [SubAckReturnCode] = []
        var accepted: [(filter: String, qos: QoS)] = []
        returnCodes.reserveCapacity(subscribe.subscriptions.count)
        for request in subscribe.subscriptions {
            do {
                try MQTTTopic.validateFilter(request.topicFilter)
            } catch {
                logger.notice("SUBSCRIBE refused", metadata: ["filter": "\(request.topicFilter)", "error": "\(error)"])
                returnCodes.append(.failure)
                continue
            }
            // The subscription trie is as deep as the deepest filter; bounding the depth bounds the work (and the
            // recursion) of every later match and removal.
            guard Self.levelCount(of: request.topicFilter) <= core.configuration.maxTopicLevels else {
                logger.notice(
                    "SUBSCRIBE refused: too many topic levels",
                    metadata: ["maximum": "\(core.configuration.maxTopicLevels)"])
                returnCodes.append(.failure)
                continue
            }
            // [auth] read ACL: the whole filter must be readable (ClientAccessPolicy.maySubscribe).
            guard session.accessPolicy.maySubscribe(to: request.topicFilter) else {
                logger.notice("SUBSCRIBE refused: acl denies read", metadata: ["filter": "\(request.topicFilter)"])
                returnCodes.append(.failure)
                continue
            }
            let granted = min(request.qos, core.configuration.maxQoS)
            core.subscribe(session, to: request.topicFilter, qos: granted)
            returnCodes.append(.granted(granted))
            accepted.append((request.topicFilter, granted))
            logger.debug("subscribed", metadata: ["filter": "\(request.topicFilter)", "qos": "\(granted.rawValue)"])
        }
        core.whenDurable { [self] in  // [persist] SUBACK once the subscriptions are durable
            write(.suback(SubAckPacket(packetID: subscribe.packetID, returnCodes: returnCodes)))
            for (filter, qos) in accepted {
                core.deliverRetained(matching: filter, grantedQoS: qos, to: session)
            }
        }
    }

    /// UNSUBSCRIBE: removes the filters; UNSUBACK once durable.
    func handleUnsubscribe(_ unsubscribe: UnsubscribePacket) {
        guard let session = attachedSession() else { return }
        for filter in unsubscribe.topicFilters {
            core.unsubscribe(session, from: filter)
        }
        core.whenDurable { [self] in write(.unsuback(UnsubAckPacket(packetID: unsubscribe.packetID))) }  // [persist]
    }
}
