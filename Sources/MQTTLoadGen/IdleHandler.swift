import MQTTCore
import NIOCore

/// One idle connection: CONNECT, then only PINGREQ every half keepalive interval.
final class IdleHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let counters: LiveCounters
    /// Succeeds on CONNACK.
    private let ready: EventLoopPromise<Void>
    private var scanner: InboundFrameScanner
    private var inbound = InboundBuffer()
    private var opening: ConnectionOpening

    /// Creates the handler of one connection that sends `connectPacket`, a CONNECT at `protocolVersion`.
    init(
        connectPacket: ByteBuffer, keepAliveSeconds: UInt16, protocolVersion: MQTTProtocolVersion,
        counters: LiveCounters, ready: EventLoopPromise<Void>
    ) {
        self.scanner = InboundFrameScanner(path: .scan, protocolVersion: protocolVersion)
        self.opening = ConnectionOpening(connectPacket: connectPacket, keepAliveSeconds: keepAliveSeconds)
        self.counters = counters
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { opening.begin(on: context.channel) }
    }

    func channelActive(context: ChannelHandlerContext) {
        opening.begin(on: context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        opening.end()
        ready.fail(LoadGenError.closedDuringHandshake)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbound.append(unwrapInboundIn(data))
        do {
            try inbound.forEachFrame(&scanner) { (frame) throws(LoadGenError) in
                switch frame {
                case .control(.connack(let connack)):
                    guard connack.returnCode == .accepted else {
                        throw .connectionRefused(returnCode: connack.returnCode.rawValue)
                    }
                    counters.connected.add(1, ordering: .relaxed)
                    ready.succeed(())
                case .publish, .acknowledgement, .control:
                    break  // PINGRESP.
                }
            }
        } catch {
            ready.fail(error)
            context.close(promise: nil)
        }
    }
}
