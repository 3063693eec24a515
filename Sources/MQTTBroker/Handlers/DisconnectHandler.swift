import MQTTCore

/// DISCONNECT (MQTT 3.1.1 section 3.14, MQTT 5.0 section 3.14): the client ends the connection cleanly, so its will
/// is discarded (MQTT-3.14.4-3) unless an MQTT 5 client asks for it (0x04), and a session that ends with the
/// connection ends now. An MQTT 5 client may change its Session Expiry Interval here, but not from 0 (MQTT-3.14.2-2).
enum DisconnectHandler {
    static func handle(_ disconnect: DisconnectPacket, on connection: BrokerConnectionHandler) {
        if let expiry = disconnect.properties.sessionExpiryInterval, let session = connection.session {
            guard session.expiryInterval != 0 || expiry == 0 else {
                connection.close(.protocolViolation(.sessionExpiryAfterZero))
                return
            }
            session.expiryInterval = expiry
            if expiry == 0, !session.cleanSession {
                session.cleanSession = true  // ends with this connection, and persistence forgets it
                connection.core.storage.sessionRemoved(session)
            }
            connection.core.storage.sessionLifetimeChanged(session)  // a persistent session's new interval survives a restart
        }
        let asksForWill = disconnect.reasonCode == .disconnectWithWillMessage
        connection.close(asksForWill ? .clientDisconnectedWithWill : .clientDisconnected)
    }
}
