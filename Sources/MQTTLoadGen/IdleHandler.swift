import MQTTCore
import NIOCore

/// One idle connection: CONNECT, then only PINGREQ every half keepalive interval.
final class IdleHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let connectPacket: ByteBuffer
    private let keepAliveSeconds: UInt16
    private let counters: LiveCounters
    /// Succeeds on CONNACK.
    private let ready: EventLoopPromise<Void>
    private var scanner = InboundFrameScanner(path: .scan)
    private var inbound = InboundBuffer()
    private var keepAlive: RepeatedTask?

    init(connectPacket: ByteBuffer, keepAliveSeconds: UInt16, counters: LiveCounters, ready: EventLoopPromise<Void>) {
        self.connectPacket = connectPacket
        self.keepAliveSeconds = keepAliveSeconds
        self.counters = counters
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { sendConnect(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendConnect(context: context)
        context.fireChannelActive()
    }

    private func sendConnect(context: ChannelHandlerContext) {
        guard keepAlive == nil else { return }
        keepAlive = KeepAlive.start(on: context.channel, keepAliveSeconds: keepAliveSeconds)
        context.writeAndFlush(wrapOutboundOut(connectPacket), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        keepAlive?.cancel()
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
