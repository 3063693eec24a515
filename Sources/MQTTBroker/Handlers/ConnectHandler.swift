import MQTTCore

/// CONNECT (MQTT 3.1.1 section 3.1): the user name from a client certificate where the listener takes it from
/// there, then authentication, client identifier rules, takeover and the session (``BrokerCore/connect(_:connection:)``);
/// CONNACK, and what the session still owes the client.
enum ConnectHandler {
    static func handle(_ connect: ConnectPacket, on connection: BrokerConnectionHandler) {
        connection.protocolVersion = connect.protocolVersion  // a refusing CONNACK is encoded for it too
        var connect = connect
        if connection.usesCertificateIdentity {  // use_identity_as_username: the certificate's CN is the user name
            guard let identified = connection.certificateIdentity?.applied(to: connect) else {
                connection.logger.notice("CONNECT refused: client certificate has no common name to use as user name")
                refuse(.notAuthorized, on: connection)
                return
            }
            connect = identified
        }
        let core = connection.core
        switch core.connect(connect, connection: connection) {
        case .rejected(let code):
            refuse(code, on: connection)
        case .accepted(let session, let sessionPresent):
            var will = connect.will
            if let topic = will?.topic, !session.accessPolicy.mayPublish(to: topic) {  // write ACL for the will
                connection.logger.notice("will dropped: acl denies write", metadata: ["topic": "\(topic)"])
                will = nil
            }
            if connect.keepAliveSeconds > core.configuration.maxKeepalive {
                connection.logger.notice(
                    "keepalive above max_keepalive accepted (MQTT 3.1.1 cannot negotiate it)",
                    metadata: ["keepalive": "\(connect.keepAliveSeconds)"]
                )
            }
            connection.connectAccepted(connect, will: will)
            connection.logger.info(
                "client connected",
                metadata: [
                    "cleanSession": "\(connect.cleanSession)", "keepalive": "\(connect.keepAliveSeconds)",
                    "sessionPresent": "\(sessionPresent)", "protocol": "\(connect.protocolVersion)",
                ]
            )
            connection.write(.connack(ConnAckPacket(sessionPresent: sessionPresent, returnCode: .accepted)))
            core.resumeDelivery(for: session)
        }
    }

    /// CONNACK with `code`, then the connection closes.
    private static func refuse(_ code: ConnectReturnCode, on connection: BrokerConnectionHandler) {
        connection.write(.connack(ConnAckPacket(sessionPresent: false, returnCode: code)))
        connection.close(.connectRejected(code))
    }
}
