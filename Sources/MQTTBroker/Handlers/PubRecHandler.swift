import MQTTCore

/// PUBREC from a client (MQTT 3.1.1 section 3.5): it received a QoS 2 delivery; the broker answers PUBREL.
/// A PUBREC for a QoS 1 delivery breaks the protocol and closes the connection, as mosquitto does.
enum PubRecHandler {
    static func handle(_ pubrec: PubRecPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        if connection.core.acknowledged(.pubrec, packetID: pubrec.packetID, by: session) == .wrongFlow {
            connection.close(.protocolViolation(.acknowledgementOutOfFlow(.pubrec, packetID: pubrec.packetID)))
        }
    }
}
