import MQTTCore
import NIOCore

/// The "socket" of a bridge's local side: the broker's ``BrokerConnectionHandler`` writes the packets it sends to
/// the bridge's local client here, and they are decoded and handed to the bridge rather than to a socket. Reusing
/// the ordinary connection for the local side gives the bridge the broker's sessions, QoS flows, queues,
/// persistence, back-pressure and ACLs unchanged, as mosquitto's bridge is an ordinary client context.
///
/// Confined to the core's event loop. Packets reach the bridge in a later task, never from inside the write:
/// the bridge answers by feeding the handler again, which must not happen while the handler is writing.
final class BridgeLocalTransport: ConnectionTransport {
    /// Receives the decoded packets, and `nil` once the broker closed this connection.
    private let deliver: (MQTTPacket?) -> Void
    private let eventLoop: any EventLoop
    @exclusivity(unchecked) private var pending: [ByteBuffer] = []
    @exclusivity(unchecked) private var decoder = MQTTPacketDecoder(acceptsVersion5: true)
    @exclusivity(unchecked) private var cumulation: ByteBuffer?
    @exclusivity(unchecked) private var closed = false
    /// Pauses and resumes reading from the remote on behalf of the core (publisher back-pressure).
    private let pauseReading: (Bool) -> Void

    init(eventLoop: any EventLoop, deliver: @escaping (MQTTPacket?) -> Void, pauseReading: @escaping (Bool) -> Void) {
        self.eventLoop = eventLoop
        self.deliver = deliver
        self.pauseReading = pauseReading
        decoder.protocolVersion = .v5  // the local side always speaks MQTT 5 (for No Local)
    }

    var remoteAddress: SocketAddress? { nil }
    var socketEventLoop: any EventLoop { eventLoop }
    var parkingSupport: ParkingSupport { .unsupported }

    func write(_ buffer: ByteBuffer, ownBuffer: Bool) {
        pending.append(buffer)
    }

    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        handler.outputWritten(bytes)
        var packets: [MQTTPacket] = []
        for var buffer in batch {
            if cumulation == nil {
                cumulation = buffer
            } else {
                cumulation?.writeBuffer(&buffer)
            }
        }
        while var buffer = cumulation {
            cumulation = nil
            do {
                guard let packet = try decoder.decode(from: &buffer) else {
                    cumulation = buffer
                    break
                }
                packets.append(packet)
                if buffer.readableBytes > 0 { cumulation = buffer }
            } catch {
                // The broker's own encoding: cannot happen. Ending the local side restarts the bridge.
                packets.removeAll()
                close()
                return
            }
        }
        guard !packets.isEmpty else { return }
        let deliver = self.deliver
        eventLoop.assumeIsolated().execute {
            for packet in packets { deliver(packet) }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        let deliver = self.deliver
        eventLoop.assumeIsolated().execute { deliver(nil) }
    }

    func setReadingPausedByCore(_ paused: Bool) {
        pauseReading(paused)
    }
}
