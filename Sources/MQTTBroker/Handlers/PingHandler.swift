import MQTTCore

/// PINGREQ (MQTT 3.1.1 section 3.12): answered with PINGRESP at once. Hearing it already reset the keepalive.
enum PingHandler {
    static func handle(on connection: BrokerConnectionHandler) {
        connection.write(.pingresp(PingRespPacket()))
    }
}
