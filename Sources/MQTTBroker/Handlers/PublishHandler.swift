import MQTTCore

/// PUBLISH from a client (MQTT 3.1.1 section 3.3, 4.3): checked against `max_qos`, the ACL and `$SYS`, then routed
/// and acknowledged with PUBACK / PUBREC, at once or once the message is durable.
enum PublishHandler {
    static func handle(_ publish: PublishPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        core.statistics.publishReceived += 1
        guard publish.qos <= core.configuration.maxQoS else {
            connection.close(.protocolViolation(.qosNotSupported(publish.qos)))
            return
        }
        // A topic deeper than max_topic_levels is hostile input (mosquitto closes the connection too). A topic of
        // N levels has at least N - 1 bytes, so short topics skip the count.
        let maxLevels = core.configuration.maxTopicLevels
        if publish.topic.utf8.count >= maxLevels {
            let levels = SubscribeHandler.levelCount(of: publish.topic)
            guard levels <= maxLevels else {
                connection.close(.protocolViolation(.tooManyTopicLevels(levels)))
                return
            }
        }
        let message = BrokerMessage(
            topic: publish.topic,
            payload: publish.payload,
            qos: publish.qos,
            retain: publish.retain && core.configuration.retainAvailable
        )
        // Clients may not write the broker's own statistics: acknowledged, not routed.
        let routable = !MQTTTopic.isSystemTopic(publish.topic) && session.accessPolicy.mayPublish(to: publish.topic)
        if !routable {
            connection.logger.notice(
                "PUBLISH ignored: $SYS topic or acl denies write", metadata: ["topic": "\(publish.topic)"])
        }
        let storage = core.storage
        switch (publish.qos, publish.packetID) {
        case (.atMostOnce, _):
            storage.acceptPublish(message, from: session, routable: routable, acknowledgement: nil, via: connection)
        case (.atLeastOnce, let packetID?):
            let puback = MQTTAcknowledgement(.puback, packetID: packetID)
            storage.acceptPublish(message, from: session, routable: routable, acknowledgement: puback, via: connection)
        case (.exactlyOnce, let packetID?):
            let pubrec = MQTTAcknowledgement(.pubrec, packetID: packetID)
            if session.inboundQoS2.publishReceived(packetID: packetID) {
                storage.acceptPublish(message, from: session, routable: routable, acknowledgement: pubrec, via: connection)
            } else {
                storage.writeWhenDurable(pubrec, via: connection)  // a duplicate: PUBREC once the original is durable
            }
        case (.atLeastOnce, nil), (.exactlyOnce, nil):  // the decoder reads one for QoS 1/2; checked, not assumed
            connection.close(.protocolViolation(.missingPacketID))
        }
    }
}
