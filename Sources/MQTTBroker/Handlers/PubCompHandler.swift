import MQTTCore

/// PUBCOMP from a client (MQTT 3.1.1 section 3.7): it completed a QoS 2 delivery; the session's window moves on.
/// A PUBCOMP for a QoS 1 delivery, or before PUBREL, breaks the protocol and closes the connection, as mosquitto
/// does.
enum PubCompHandler {
    static func handle(_ pubcomp: PubCompPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        if connection.core.acknowledged(.pubcomp, packetID: pubcomp.packetID, by: session) == .wrongFlow {
            connection.close(.protocolViolation(.acknowledgementOutOfFlow(.pubcomp, packetID: pubcomp.packetID)))
        }
    }
}
