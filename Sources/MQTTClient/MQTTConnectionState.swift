/// The connection states an ``MQTTClient`` reports through `stateChanges()`.
public enum MQTTConnectionState: Sendable, Hashable {
    /// A connection attempt is under way (TCP, TLS, CONNECT sent, waiting for CONNACK).
    case connecting
    /// The broker accepted the connection; `sessionPresent` tells whether it kept a previous session.
    case connected(sessionPresent: Bool)
    /// No connection, for the given reason; a `.reconnecting` state follows if the policy allows.
    case disconnected(reason: MQTTDisconnectReason)
    /// Waiting `delay` before reconnect attempt number `attempt` (1-based).
    case reconnecting(attempt: Int, delay: Duration)
    /// `disconnect()` completed: DISCONNECT was sent and nothing reconnects.
    case closed
}

/// Why the client is disconnected.
public enum MQTTDisconnectReason: Sendable, Hashable {
    /// The connection attempt failed or the broker refused it.
    case connectFailed(MQTTClientError)
    /// An established connection broke (network error, broker went away, keep-alive timeout).
    case connectionLost(MQTTClientError)
}
