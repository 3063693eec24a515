import NIOCore

/// The `$SYS/broker/...` topics the broker publishes, named as mosquitto names them.
enum SysTopics {
    /// Topic and payload of every `$SYS` value, computed from the core's current state.
    static func values(of core: BrokerCore, now: NIODeadline) -> [(topic: String, value: String)] {
        let stats = core.statistics
        let uptimeSeconds = max(0, (now - core.startedAt).nanoseconds / 1_000_000_000)
        let connected = core.connectedClientCount
        return [
            ("$SYS/broker/version", BrokerCore.version),
            ("$SYS/broker/uptime", "\(uptimeSeconds) seconds"),
            ("$SYS/broker/clients/connected", "\(connected)"),
            ("$SYS/broker/clients/disconnected", "\(core.sessionCount - connected)"),
            ("$SYS/broker/clients/total", "\(core.sessionCount)"),
            ("$SYS/broker/clients/maximum", "\(stats.maximumConnected)"),
            ("$SYS/broker/messages/received", "\(stats.messagesReceived)"),
            ("$SYS/broker/messages/sent", "\(stats.messagesSent)"),
            ("$SYS/broker/publish/messages/received", "\(stats.publishReceived)"),
            ("$SYS/broker/publish/messages/sent", "\(stats.publishSent)"),
            ("$SYS/broker/publish/messages/dropped", "\(stats.publishDropped)"),
            // ours (mosquitto has no such topics): drop causes and flow-control state.
            ("$SYS/broker/publish/messages/dropped/queue_full", "\(stats.publishDroppedQueueFull)"),
            ("$SYS/broker/publish/messages/dropped/slow_consumer", "\(stats.publishDroppedSlowConsumer)"),
            ("$SYS/broker/clients/slow_consumer_disconnects", "\(stats.slowConsumerDisconnects)"),
            ("$SYS/broker/clients/backpressured", "\(core.backpressuredConnectionCount)"),
            ("$SYS/broker/clients/backpressure_pauses", "\(core.backpressurePauseCount)"),
            // ours: idle connections without a channel right now, and parkings since start.
            ("$SYS/broker/clients/parked", "\(core.parkedConnections.count)"),
            ("$SYS/broker/clients/parkings", "\(core.parkCounts.parked)"),
            ("$SYS/broker/bytes/received", "\(stats.bytesReceived)"),
            ("$SYS/broker/bytes/sent", "\(stats.bytesSent)"),
            ("$SYS/broker/subscriptions/count", "\(core.subscriptionCount)"),
            ("$SYS/broker/retained messages/count", "\(core.retainedStore.count)"),
        ] + core.bridgeSysValues  // ours: per bridge (Bridge/BrokerCore+Bridges.swift)
    }
}
