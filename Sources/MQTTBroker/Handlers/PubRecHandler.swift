import MQTTCore

/// PUBREC from a client (MQTT 3.1.1 section 3.5): it received a QoS 2 delivery; the broker answers PUBREL.
enum PubRecHandler {
    static func handle(_ pubrec: PubRecPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        connection.core.acknowledged(.pubrec, packetID: pubrec.packetID, by: session)
    }
}
