import MQTTCore

/// DISCONNECT (MQTT 3.1.1 section 3.14): the client ends the connection cleanly, so its will is discarded
/// (MQTT-3.14.4-3) and a clean session ends with it.
enum DisconnectHandler {
    static func handle(on connection: BrokerConnectionHandler) {
        connection.close(.clientDisconnected)
    }
}
