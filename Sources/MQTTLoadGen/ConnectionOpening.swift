import NIOCore

/// The opening every load-generator connection shares: CONNECT as soon as the socket is active, then PINGREQ every
/// half keepalive interval so the broker never drops a quiet connection. Owned by one handler, on its loop.
struct ConnectionOpening {
    /// The pre-encoded CONNECT.
    let connectPacket: ByteBuffer
    /// The keepalive announced in it; 0 sends no PINGREQ.
    let keepAliveSeconds: UInt16
    private var keepAlive: RepeatedTask?
    private var begun = false

    init(connectPacket: ByteBuffer, keepAliveSeconds: UInt16) {
        self.connectPacket = connectPacket
        self.keepAliveSeconds = keepAliveSeconds
    }

    /// Sends CONNECT and starts pinging, once: call it from `handlerAdded` when the channel is already active and
    /// from `channelActive`.
    mutating func begin(on channel: any Channel) {
        guard !begun else { return }
        begun = true
        keepAlive = Self.startPinging(on: channel, keepAliveSeconds: keepAliveSeconds)
        channel.writeAndFlush(connectPacket, promise: nil)
    }

    /// Stops pinging (the connection closed).
    mutating func end() {
        keepAlive?.cancel()
        keepAlive = nil
    }

    /// The PINGREQ task; it also ends by itself when the channel closes.
    private static func startPinging(on channel: any Channel, keepAliveSeconds: UInt16) -> RepeatedTask? {
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
