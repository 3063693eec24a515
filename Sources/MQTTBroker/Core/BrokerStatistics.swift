/// Counters behind the `$SYS/broker/...` topics. Plain value type, owned by the broker core.
struct BrokerStatistics: Sendable, Hashable {
    /// Control packets of any type received (mosquitto's `messages/received`).
    var messagesReceived: UInt64 = 0
    /// Control packets of any type sent (mosquitto's `messages/sent`).
    var messagesSent: UInt64 = 0
    /// PUBLISH packets received.
    var publishReceived: UInt64 = 0
    /// PUBLISH packets sent.
    var publishSent: UInt64 = 0
    /// QoS 1/2 messages dropped because a session queue was full.
    var publishDropped: UInt64 = 0
    /// Bytes read from client sockets.
    var bytesReceived: UInt64 = 0
    /// Bytes written to client sockets.
    var bytesSent: UInt64 = 0
    /// The largest number of simultaneously connected clients seen.
    var maximumConnected: Int = 0
}
