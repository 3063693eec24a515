import MQTTCore

/// PUBACK from a client (MQTT 3.1.1 section 3.4): it completed a QoS 1 delivery; the session's window moves on.
/// A PUBACK for a QoS 2 delivery breaks the protocol and closes the connection, as mosquitto does.
enum PubAckHandler {
    static func handle(_ puback: PubAckPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        if connection.core.acknowledged(.puback, packetID: puback.packetID, by: session) == .wrongFlow {
            connection.close(.protocolViolation(.acknowledgementOutOfFlow(.puback, packetID: puback.packetID)))
        }
    }
}
