import NIOCore

/// Sends PINGREQ every half keepalive interval so the broker never drops a quiet connection.
enum KeepAlive {
    /// Starts pinging on `channel`; the task ends when the channel closes (its write fails) or is cancelled.
    static func start(on channel: any Channel, keepAliveSeconds: UInt16) -> RepeatedTask? {
        guard keepAliveSeconds > 0 else { return nil }
        let interval = TimeAmount.milliseconds(Int64(keepAliveSeconds) * 500)
        return channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            guard channel.isActive else {
                task.cancel()
                return
            }
            channel.writeAndFlush(WirePackets.pingRequest, promise: nil)
        }
    }
}
