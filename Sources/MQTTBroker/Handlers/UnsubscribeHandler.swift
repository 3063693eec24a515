import MQTTCore

/// UNSUBSCRIBE (MQTT 3.1.1 section 3.10, MQTT 5.0 section 3.10): removes the filters (unknown ones are ignored,
/// MQTT-3.10.4-5; MQTT 5 reports them as 0x11 No subscription existed) and answers UNSUBACK once the removal is
/// durable.
enum UnsubscribeHandler {
    static func handle(_ unsubscribe: UnsubscribePacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        var reasonCodes: [MQTTReasonCode] = []
        for filter in unsubscribe.topicFilters {
            let existed = core.unsubscribe(session, from: filter)
            reasonCodes.append(existed ? .success : .noSubscriptionExisted)
        }
        let version5 = connection.protocolVersion == .v5
        core.storage.whenDurable {
            let unsuback = UnsubAckPacket(packetID: unsubscribe.packetID, reasonCodes: version5 ? reasonCodes : [])
            connection.write(.unsuback(unsuback))
        }
    }
}
