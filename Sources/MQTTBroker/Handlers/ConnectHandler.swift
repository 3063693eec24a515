import MQTTCore

/// CONNECT (MQTT 3.1.1 section 3.1, MQTT 5.0 section 3.1): the user name from a client certificate where the
/// listener takes it from there, then authentication, client identifier rules, takeover and the session; CONNACK
/// (with the MQTT 5 properties of ``ConnAckProperties``), and what the session still owes the client. (mosquitto's
/// `handle_connect.c`.)
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
        let sizeLimit = connection.core.configuration.messageSizeLimit
        if sizeLimit > 0, let will = connect.will, will.payload.readableBytes > sizeLimit {  // message_size_limit
            connection.logger.notice("CONNECT refused: will payload above message_size_limit")
            refuse(connect.protocolVersion == .v5 ? .packetTooLarge : .notAuthorized, on: connection)
            return
        }
        if connect.properties.authenticationMethod != nil {
            AuthHandler.start(connect, on: connection)  // enhanced authentication (MQTT 5.0 4.12): SCRAM-SHA-512
            return
        }
        proceed(connect, on: connection)
    }

    /// CONNECT once authenticated, or to be authenticated by user name and password: the session, CONNACK (with
    /// `extraProperties`, e.g. the last step of enhanced authentication) and what the session owes the client.
    static func proceed(
        _ connect: ConnectPacket, on connection: BrokerConnectionHandler, enhancedAuthentication: Bool = false,
        extraProperties: [MQTTProperty] = []
    ) {
        let core = connection.core
        switch decide(connect, connection: connection, core: core, authenticated: enhancedAuthentication) {
        case .rejected(let code):
            refuse(code, on: connection)
        case .accepted(let session, let sessionPresent, let assignedClientID):
            var will = connect.will
            if let topic = will?.topic, !session.accessPolicy.mayPublish(to: topic) {  // write ACL for the will
                connection.logger.notice("will dropped: acl denies write", metadata: ["topic": "\(topic)"])
                will = nil
            }
            let keepAlive = ConnAckProperties.keepAlive(requested: connect, maxKeepalive: core.configuration.maxKeepalive)
            if connect.protocolVersion != .v5, connect.keepAliveSeconds > core.configuration.maxKeepalive {
                connection.logger.notice(
                    "keepalive above max_keepalive accepted (MQTT 3.1.1 cannot negotiate it)",
                    metadata: ["keepalive": "\(connect.keepAliveSeconds)"]
                )
            }
            connection.connectAccepted(connect, will: will, keepAliveSeconds: keepAlive)
            connection.isBridgeClient = connect.isBridge
            connection.logger.info(
                "client connected",
                metadata: [
                    "cleanSession": "\(connect.cleanSession)", "keepalive": "\(keepAlive)",
                    "sessionPresent": "\(sessionPresent)", "protocol": "\(connect.protocolVersion)",
                ]
            )
            // MQTT 3.1 has no session-present flag: that byte of its CONNACK is reserved and must be 0.
            let flagged = sessionPresent && connect.protocolVersion != .v3_1
            var connack = ConnAckPacket(sessionPresent: flagged, returnCode: .accepted)
            if connect.protocolVersion == .v5 {
                connack.properties = ConnAckProperties.make(
                    for: connect, configuration: core.configuration, assignedClientID: assignedClientID,
                    keepAliveSeconds: keepAlive)
                connack.properties.entries += extraProperties
            }
            connection.write(.connack(connack))
            core.resumeDelivery(for: session)
        }
    }

    /// CONNACK with `code`, then the connection closes.
    static func refuse(_ code: MQTTReasonCode, on connection: BrokerConnectionHandler) {
        connection.write(.connack(ConnAckPacket(sessionPresent: false, reasonCode: code)))
        connection.close(.connectRejected(ConnectReturnCode(code)))
    }

    /// The outcome of CONNECT processing.
    enum Decision {
        /// Send CONNACK 0 with this session-present flag; the connection is attached to `session`. A client that
        /// sent an empty identifier was given `assignedClientID`.
        case accepted(session: BrokerSession, sessionPresent: Bool, assignedClientID: String?)
        /// Send CONNACK with this code (the MQTT 5 one; a 3.1.1 client gets its nearest return code) and close.
        case rejected(MQTTReasonCode)
    }

    /// MQTT 3.1.1 section 3.1.4 and MQTT 5.0 section 3.1.4: authentication, client identifier rules, takeover of
    /// an existing connection, and session creation, resumption or discarding.
    static func decide(
        _ packet: ConnectPacket, connection: BrokerConnectionHandler, core: BrokerCore, authenticated: Bool = false
    ) -> Decision {
        core.eventLoop.assertInEventLoop()
        let sessions = core.sessions
        let lifetime = SessionLifetime(packet, persistentClientExpiration: core.configuration.persistentClientExpiration)
        var clientID = packet.clientIdentifier
        var assignedClientID: String?
        if clientID.isEmpty {
            // 3.1.1 needs clean session for an empty identifier (MQTT-3.1.3-8); MQTT 5 assigns one either way
            // and says which in the CONNACK (MQTT-3.2.2-16).
            guard core.configuration.allowZeroLengthClientID, packet.cleanSession || packet.protocolVersion == .v5 else {
                return .rejected(.clientIdentifierNotValid)
            }
            clientID = sessions.assignClientID()
            assignedClientID = clientID
        }
        // use_identity_as_username: the verified client certificate authenticated the client.
        // A bridge's local side is the broker itself (mosquitto does not authenticate it either).
        if !connection.usesCertificateIdentity, !authenticated, !(connection.transport is BridgeLocalTransport),
            let refusal = authenticate(packet, clientID: clientID, configuration: core.configuration)
        {
            return .rejected(refusal)
        }
        // Takeover (MQTT-3.1.4-2): the old connection ends without DISCONNECT. Its will is published only when the
        // session ends with it (either connection asked for a clean session), as mosquitto does: a client that
        // reconnects to its persistent session has not gone away, and its presence must not flicker offline.
        if let existing = sessions.session(forClientID: clientID), let old = existing.connection {
            if !existing.cleanSession && !lifetime.startsClean { old.discardWill() }
            old.close(.takenOver)
        }
        let sessionPresent: Bool
        let session: BrokerSession
        if let existing = sessions.session(forClientID: clientID), !lifetime.startsClean {
            session = existing
            sessionPresent = true
            core.sessionResumed(existing)
        } else {
            if let existing = sessions.session(forClientID: clientID) {
                core.removeSession(existing)
            }
            session = sessions.makeSession(clientID: clientID, cleanSession: lifetime.endsWithConnection)
            sessionPresent = false
        }
        let wasPersistent = sessionPresent && !session.cleanSession
        lifetime.apply(to: session, connect: packet, configuration: core.configuration)
        // The ACL rules of this connection's identity (Auth/ClientAccessPolicy).
        session.accessPolicy = ClientAccessPolicy(
            acl: core.configuration.accessControl, clientID: clientID, username: packet.username)
        core.attach(session, to: connection)
        if !wasPersistent, !session.cleanSession { core.storage.sessionCreated(session) }
        if wasPersistent, session.cleanSession { core.storage.sessionRemoved(session) }
        if wasPersistent, !session.cleanSession { core.storage.sessionLifetimeChanged(session) }  // persistence hook
        return .accepted(session: session, sessionPresent: sessionPresent, assignedClientID: assignedClientID)
    }

    /// The authentication step: nil to accept, or the reason code to refuse with.
    private static func authenticate(
        _ packet: ConnectPacket, clientID: String, configuration: BrokerConfiguration
    ) -> MQTTReasonCode? {
        guard let username = packet.username else {
            return configuration.allowAnonymous ? nil : .notAuthorized
        }
        guard let authenticator = configuration.authenticator else { return nil }
        let accepted = authenticator.authenticate(username: username, password: packet.password, clientIdentifier: clientID)
        return accepted ? nil : .badUserNameOrPassword
    }
}
