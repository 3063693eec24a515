import MQTTCore

/// UNSUBSCRIBE (MQTT 3.1.1 section 3.10): removes the filters (unknown ones are ignored, MQTT-3.10.4-5) and
/// answers UNSUBACK once the removal is durable.
enum UnsubscribeHandler {
    static func handle(_ unsubscribe: UnsubscribePacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        let core = connection.core
        for filter in unsubscribe.topicFilters {
            core.unsubscribe(session, from: filter)
        }
        core.storage.whenDurable {
            connection.write(.unsuback(UnsubAckPacket(packetID: unsubscribe.packetID)))
        }
    }
}
