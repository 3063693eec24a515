import MQTTCore

/// CONNECT (MQTT 3.1.1 section 3.1): the user name from a client certificate where the listener takes it from
/// there, then authentication, client identifier rules, takeover and the session; CONNACK, and what the session
/// still owes the client. (mosquitto's `handle_connect.c`.)
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
        switch decide(connect, connection: connection, core: core) {
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
            // MQTT 3.1 has no session-present flag: that byte of its CONNACK is reserved and must be 0.
            let flagged = sessionPresent && connect.protocolVersion != .v3_1
            connection.write(.connack(ConnAckPacket(sessionPresent: flagged, returnCode: .accepted)))
            core.resumeDelivery(for: session)
        }
    }

    /// CONNACK with `code`, then the connection closes.
    private static func refuse(_ code: ConnectReturnCode, on connection: BrokerConnectionHandler) {
        connection.write(.connack(ConnAckPacket(sessionPresent: false, returnCode: code)))
        connection.close(.connectRejected(code))
    }

    /// The outcome of CONNECT processing.
    enum Decision {
        /// Send CONNACK 0 with this session-present flag; the connection is attached to `session`.
        case accepted(session: BrokerSession, sessionPresent: Bool)
        /// Send CONNACK with this code and close.
        case rejected(ConnectReturnCode)
    }

    /// MQTT 3.1.1 section 3.1.4: authentication, client identifier rules, takeover of an existing connection, and
    /// session creation, resumption or discarding.
    static func decide(_ packet: ConnectPacket, connection: BrokerConnectionHandler, core: BrokerCore) -> Decision {
        core.eventLoop.assertInEventLoop()
        guard packet.protocolVersion != .v5 else { return .rejected(.unacceptableProtocolVersion) }
        let sessions = core.sessions
        var clientID = packet.clientIdentifier
        if clientID.isEmpty {
            guard packet.cleanSession else { return .rejected(.identifierRejected) }
            clientID = sessions.assignClientID()
        }
        // use_identity_as_username: the verified client certificate authenticated the client.
        if !connection.usesCertificateIdentity,
            let refusal = authenticate(packet, clientID: clientID, configuration: core.configuration)
        {
            return .rejected(refusal)
        }
        // Takeover (MQTT-3.1.4-2): the old connection ends without DISCONNECT. Its will is published only when the
        // session ends with it (either connection asked for a clean session), as mosquitto does: a client that
        // reconnects to its persistent session has not gone away, and its presence must not flicker offline.
        if let existing = sessions.session(forClientID: clientID), let old = existing.connection {
            if !existing.cleanSession && !packet.cleanSession { old.discardWill() }
            old.close(.takenOver)
        }
        let sessionPresent: Bool
        let session: BrokerSession
        if let existing = sessions.session(forClientID: clientID), !packet.cleanSession {
            session = existing
            sessionPresent = true
        } else {
            if let existing = sessions.session(forClientID: clientID) {
                core.removeSession(existing)
            }
            session = sessions.makeSession(clientID: clientID, cleanSession: packet.cleanSession)
            sessionPresent = false
        }
        session.cleanSession = packet.cleanSession
        // The ACL rules of this connection's identity (Auth/ClientAccessPolicy).
        session.accessPolicy = ClientAccessPolicy(
            acl: core.configuration.accessControl, clientID: clientID, username: packet.username)
        core.attach(session, to: connection)
        if !sessionPresent, !packet.cleanSession { core.storage.sessionCreated(session) }
        return .accepted(session: session, sessionPresent: sessionPresent)
    }

    /// The authentication step: nil to accept, or the CONNACK code to refuse with.
    private static func authenticate(
        _ packet: ConnectPacket, clientID: String, configuration: BrokerConfiguration
    ) -> ConnectReturnCode? {
        guard let username = packet.username else {
            return configuration.allowAnonymous ? nil : .notAuthorized
        }
        guard let authenticator = configuration.authenticator else { return nil }
        let accepted = authenticator.authenticate(username: username, password: packet.password, clientIdentifier: clientID)
        return accepted ? nil : .badUsernameOrPassword
    }
}
