import MQTTCore

/// PUBLISH from a client (MQTT 3.1.1 section 3.3, 4.3; MQTT 5.0 section 3.3): checked against `max_qos`, the ACL
/// and `$SYS`, then routed and acknowledged with PUBACK / PUBREC, at once or once the message is durable. An MQTT 5
/// PUBLISH also goes through ``version5Form(of:on:)`` (alias, properties, expiry, payload format).
enum PublishHandler {
    static func handle(_ publish: PublishPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        core.statistics.publishReceived += 1
        guard publish.qos <= core.configuration.maxQoS else {
            connection.close(.protocolViolation(.qosNotSupported(publish.qos)))
            return
        }
        // MQTT 5 told the client retain is unavailable (CONNACK Retain Available 0): a retained PUBLISH breaks that
        // (MQTT-3.2.2-14). 3.1.1 could not be told, so its RETAIN flag is just ignored.
        guard !publish.retain || core.configuration.retainAvailable || connection.protocolVersion != .v5 else {
            connection.close(.protocolViolation(.retainNotSupported))
            return
        }
        var message = BrokerMessage(
            topic: publish.topic,
            payload: publish.payload,
            qos: publish.qos,
            retain: publish.retain && core.configuration.retainAvailable
        )
        var payloadFormatInvalid = false
        // An MQTT 5 PUBLISH without properties (no alias either) is routed as it came, like a 3.1.1 one.
        if connection.protocolVersion == .v5, !publish.properties.isEmpty {
            guard let form = version5Form(of: publish, on: connection) else { return }
            message.topic = form.topic
            message.properties = form.properties
            message.expiresAt = form.expiresAt
            payloadFormatInvalid = form.payloadFormatInvalid
        }
        // message_size_limit: after the alias above is learnt (later PUBLISHes may use it), before anything routes.
        let sizeLimit = core.configuration.messageSizeLimit
        if sizeLimit > 0, publish.payload.readableBytes > sizeLimit {
            dropTooLarge(publish, topic: message.topic, on: connection)
            return
        }
        // A topic deeper than max_topic_levels is hostile input (mosquitto closes the connection too). A topic of
        // N levels has at least N - 1 bytes, so short topics skip the count.
        let maxLevels = core.configuration.maxTopicLevels
        if message.topic.utf8.count >= maxLevels {
            let levels = SubscribeHandler.levelCount(of: message.topic)
            guard levels <= maxLevels else {
                connection.close(.protocolViolation(.tooManyTopicLevels(levels)))
                return
            }
        }
        // Clients may not write the broker's own statistics: acknowledged, not routed.
        let routable = !MQTTTopic.isSystemTopic(message.topic) && session.accessPolicy.mayPublish(to: message.topic)
        if !routable {
            connection.logger.notice(
                "PUBLISH ignored: $SYS topic or acl denies write", metadata: ["topic": "\(message.topic)"])
        }
        var reasonCode = MQTTReasonCode.success
        if connection.protocolVersion == .v5, publish.qos != .atMostOnce {
            reasonCode = payloadFormatInvalid
                ? .payloadFormatInvalid : version5ReasonCode(topic: message.topic, routable: routable, on: connection)
        }
        let forwards = routable && !payloadFormatInvalid
        let storage = core.storage
        switch (publish.qos, publish.packetID) {
        case (.atMostOnce, _):
            storage.acceptPublish(message, from: session, routable: forwards, acknowledgement: nil, via: connection)
        case (.atLeastOnce, let packetID?):
            let puback = MQTTAcknowledgement(.puback, packetID: packetID, reasonCode: reasonCode)
            storage.acceptPublish(message, from: session, routable: forwards, acknowledgement: puback, via: connection)
        case (.exactlyOnce, let packetID?):
            let pubrec = MQTTAcknowledgement(.pubrec, packetID: packetID, reasonCode: reasonCode)
            guard !reasonCode.isFailure else {
                // A PUBREC with an error ends the QoS 2 flow (MQTT 5.0 4.3.3): nothing to release later.
                storage.writeWhenDurable(pubrec, via: connection)
                return
            }
            if session.inboundQoS2.publishReceived(packetID: packetID) {
                let receiveMaximum = core.configuration.maxInflightMessages
                if connection.protocolVersion == .v5, receiveMaximum > 0, session.inboundQoS2.count > receiveMaximum {
                    connection.close(.protocolViolation(.receiveMaximumExceeded(session.inboundQoS2.count)))
                    return
                }
                storage.acceptPublish(message, from: session, routable: forwards, acknowledgement: pubrec, via: connection)
            } else {
                storage.writeWhenDurable(pubrec, via: connection)  // a duplicate: PUBREC once the original is durable
            }
        case (.atLeastOnce, nil), (.exactlyOnce, nil):  // the decoder reads one for QoS 1/2; checked, not assumed
            connection.close(.protocolViolation(.missingPacketID))
        }
    }

    /// A payload above `message_size_limit`: not routed, counted as dropped, and its QoS flow completed as
    /// mosquitto does. MQTT 5 hears why (0x95 Packet too large; a failed PUBREC ends the QoS 2 flow); MQTT 3.1.1
    /// cannot be told, and its PUBREL finds nothing to release and is answered with PUBCOMP.
    private static func dropTooLarge(_ publish: PublishPacket, topic: String, on connection: BrokerConnectionHandler) {
        connection.core.statistics.publishDropped += 1
        connection.logger.notice(
            "PUBLISH dropped: payload above message_size_limit",
            metadata: ["topic": "\(topic)", "bytes": "\(publish.payload.readableBytes)"])
        let reasonCode: MQTTReasonCode = connection.protocolVersion == .v5 ? .packetTooLarge : .success
        switch (publish.qos, publish.packetID) {
        case (.atLeastOnce, let packetID?):
            let puback = MQTTAcknowledgement(.puback, packetID: packetID, reasonCode: reasonCode)
            connection.core.storage.writeWhenDurable(puback, via: connection)
        case (.exactlyOnce, let packetID?):
            let pubrec = MQTTAcknowledgement(.pubrec, packetID: packetID, reasonCode: reasonCode)
            connection.core.storage.writeWhenDurable(pubrec, via: connection)
        case (.atMostOnce, _), (.atLeastOnce, nil), (.exactlyOnce, nil):
            break
        }
    }
}
