import MQTTCore

/// PUBREL from a client (MQTT 3.1.1 section 3.6): it releases its QoS 2 publish; the broker forgets the packet id
/// and answers PUBCOMP once the release is durable.
enum PubRelHandler {
    static func handle(_ pubrel: PubRelPacket, on connection: BrokerConnectionHandler) {
        guard let session = connection.attachedSession() else { return }
        connection.core.storage.releaseInboundQoS2(session, packetID: pubrel.packetID, via: connection)
    }
}
