import Logging

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
    /// Messages dropped for any reason (full session queue or slow consumer).
    var publishDropped: UInt64 = 0
    // the causes behind `publishDropped`, and the flow-control events.
    /// Messages dropped because a session queue was at `max_queued_messages` or `max_queued_bytes`.
    var publishDroppedQueueFull: UInt64 = 0
    /// QoS 0 messages dropped because the subscriber's connection had too much unwritten output.
    var publishDroppedSlowConsumer: UInt64 = 0
    /// Connections closed because they did not read their output (`slow_consumer_timeout` or twice
    /// `max_pending_output_bytes`).
    var slowConsumerDisconnects: UInt64 = 0
    /// Bytes read from client sockets.
    var bytesReceived: UInt64 = 0
    /// Bytes written to client sockets.
    var bytesSent: UInt64 = 0
    /// The largest number of simultaneously connected clients seen.
    var maximumConnected: Int = 0

    /// A message for `session` was dropped because its queue was full. Logged at the session's 1st, 2nd, 4th, 8th
    /// ... drop: a flood must not turn into a log flood.
    mutating func noteDropped(_ session: BrokerSession, logger: Logger) {
        publishDropped += 1
        publishDroppedQueueFull += 1
        let dropped = session.outbound.droppedCount
        guard dropped & (dropped - 1) == 0 else { return }
        logger.warning(
            "session queue full, message dropped", metadata: ["client": "\(session.clientID)", "dropped": "\(dropped)"])
    }

    /// A QoS 0 message for a slow consumer was dropped (logged as ``noteDropped(_:logger:)`` is).
    mutating func noteDroppedSlowConsumer(_ session: BrokerSession, logger: Logger) {
        publishDropped += 1
        publishDroppedSlowConsumer += 1
        let dropped = session.outbound.slowConsumerDroppedCount
        guard dropped & (dropped - 1) == 0 else { return }
        logger.notice(
            "slow consumer: QoS 0 message dropped", metadata: ["client": "\(session.clientID)", "dropped": "\(dropped)"])
    }
}
