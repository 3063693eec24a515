import MQTTCore

/// PUBCOMP from a client (MQTT 3.1.1 section 3.7): it completed a QoS 2 delivery; the session's window moves on.
enum PubCompHandler {
    static func handle(_ pubcomp: PubCompPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        connection.core.acknowledged(.pubcomp, packetID: pubcomp.packetID, by: session)
    }
}
