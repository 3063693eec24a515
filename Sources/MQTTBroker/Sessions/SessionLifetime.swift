import MQTTCore

/// When a session begins and ends, as CONNECT asks (MQTT 3.1.1 3.1.2.4, MQTT 5.0 3.1.2.4 and 3.1.2.11.2): a 3.1.1
/// client's Clean Session both discards the old session and ends the new one with the connection; an MQTT 5
/// client's Clean Start only discards, and its Session Expiry Interval says how long the session outlives the
/// connection (absent or 0: not at all).
struct SessionLifetime: Sendable, Hashable {
    /// Whether a stored session is discarded rather than resumed.
    let startsClean: Bool
    /// Seconds the session outlives its connection: 0 ends it with the connection, `UInt32.max` never expires
    /// (every 3.1.1 persistent session).
    let expiryInterval: UInt32

    /// Whether the session ends when its connection does.
    var endsWithConnection: Bool { expiryInterval == 0 }

    /// - Parameter persistentClientExpiration: `persistent_client_expiration`, the lifetime of a 3.1.1 persistent
    ///   session once its client is gone; nil for never.
    init(_ connect: ConnectPacket, persistentClientExpiration: UInt32? = nil) {
        startsClean = connect.cleanSession
        if connect.protocolVersion == .v5 {
            expiryInterval = connect.properties.sessionExpiryInterval ?? 0
        } else {
            expiryInterval = connect.cleanSession ? 0 : max(persistentClientExpiration ?? .max, 1)
        }
    }

    /// Records the lifetime and the client's MQTT 5 limits in the session the connection attaches to.
    func apply(to session: BrokerSession, connect: ConnectPacket, configuration: BrokerConfiguration) {
        session.cleanSession = endsWithConnection
        session.expiryInterval = expiryInterval
        session.protocolVersion = connect.protocolVersion
        session.maximumPacketSize = connect.properties.maximumPacketSize.map { Int($0) }
        session.outbound.limitInflight(toReceiveMaximum: connect.properties.receiveMaximum.map { Int($0) })
        if connect.protocolVersion != .v5 {
            session.subscriptionOptions = [:]  // a 3.1.1 client resuming a v5 session gets plain deliveries
        }
    }
}
