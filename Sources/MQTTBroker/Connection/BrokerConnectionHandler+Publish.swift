import MQTTCore

/// PUBLISH and the acknowledgements of both directions: a client's publish is checked, acknowledged and
/// routed (MQTT 3.1.1 sections 3.3–3.7, 4.3); its acknowledgements of the broker's deliveries move them on.
/// Runs on the core's event loop.
extension BrokerConnectionHandler {
    /// A client's PUBLISH: checked against `max_qos`, the ACL and `$SYS`, then accepted by the core, which routes it
    /// and sends its PUBACK / PUBREC (at once, or once the message is durable).
    func handlePublish(_ publish: PublishPacket) {
        guard let session = attachedSession() else { return }
        core.statistics.publishReceived += 1
        guard publish.qos <= core.configuration.maxQoS else {
            close(.protocolViolation(.qosNotSupported(publish.qos)))
            return
        }
        let message = BrokerMessage(
            topic: publish.topic,
            payload: publish.payload,
            qos: publish.qos,
            retain: publish.retain && core.configuration.retainAvailable
        )
        // Clients may not write the broker's own statistics: acknowledged, not routed.
        let routable =
            !MQTTTopic.isSystemTopic(publish.topic) && session.accessPolicy.mayPublish(to: publish.topic)  // [auth]
        if !routable {
            logger.notice("PUBLISH ignored: $SYS topic or acl denies write", metadata: ["topic": "\(publish.topic)"])
        }
        // [persist] acceptPublish routes and acknowledges at once, or once the message is durable.
        switch (publish.qos, publish.packetID) {
        case (.atMostOnce, _):
            core.acceptPublish(message, from: session, routable: routable, acknowledgement: nil, via: self)
        case (.atLeastOnce, let packetID?):
            let puback = MQTTAcknowledgement(.puback, packetID: packetID)
            core.acceptPublish(message, from: session, routable: routable, acknowledgement: puback, via: self)
        case (.exactlyOnce, let packetID?):
            let pubrec = MQTTAcknowledgement(.pubrec, packetID: packetID)
            if session.inboundQoS2.publishReceived(packetID: packetID) {
                core.acceptPublish(message, from: session, routable: routable, acknowledgement: pubrec, via: self)
            } else {
                core.writeWhenDurable(pubrec, via: self)  // a duplicate: PUBREC once the original is durable
            }
        case (.atLeastOnce, nil), (.exactlyOnce, nil):  // the decoder reads one for QoS 1/2; checked, not assumed
            close(.protocolViolation(.missingPacketID))
        }
    }

    /// PUBACK: the client completed a QoS 1 delivery.
    func handlePubAck(_ puback: PubAckPacket) {
        guard let session = attachedSession() else { return }
        core.acknowledged(.puback, packetID: puback.packetID, by: session)
    }

    /// PUBREC: the client received a QoS 2 delivery; the core answers PUBREL.
    func handlePubRec(_ pubrec: PubRecPacket) {
        guard let session = attachedSession() else { return }
        core.acknowledged(.pubrec, packetID: pubrec.packetID, by: session)
    }

    /// PUBREL: the client releases its QoS 2 publish; PUBCOMP once the release is durable.
    func handlePubRel(_ pubrel: PubRelPacket) {
        guard let session = attachedSession() else { return }
        core.releaseInboundQoS2(session, packetID: pubrel.packetID, via: self)  // [persist] PUBCOMP once durable
    }

    /// PUBCOMP: the client completed a QoS 2 delivery.
    func handlePubComp(_ pubcomp: PubCompPacket) {
        guard let session = attachedSession() else { return }
        core.acknowledged(.pubcomp, packetID: pubcomp.packetID, by: session)
    }
}
