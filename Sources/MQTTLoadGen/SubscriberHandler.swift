import MQTTCore
import NIOCore

/// What a subscriber reports at the end of a run.
struct SubscriberSnapshot: Sendable {
    /// Per-publisher sequence accounting.
    var accounting: DeliveryAccounting
    /// Monotonic time of the last PUBLISH received (0 if none).
    var lastReceiveNanos: UInt64
    /// Latency samples in nanoseconds (fixed-rate mode only).
    var latencies: [UInt64]
}

/// What a subscriber connects with.
struct SubscriberPlan: Sendable {
    var filter: String
    var qos: QoS
    var publisherCount: Int
    var recordsLatency: Bool
    var clientID: String
    var keepAliveSeconds: UInt16
    var login: WirePackets.Login
    var decodePath: LoadGenConfig.DecodePath
    /// The protocol level of the connection.
    var protocolVersion: MQTTProtocolVersion = .v3_1_1
}

/// One subscribing connection: CONNECT, SUBSCRIBE, then counts every PUBLISH by publisher and sequence number,
/// acknowledging QoS 1/2 deliveries in one write per read. Confined to its channel's event loop.
final class SubscriberHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let plan: SubscriberPlan
    private let subscribePacket: ByteBuffer
    private let counters: LiveCounters
    /// Succeeds on SUBACK.
    private let ready: EventLoopPromise<Void>
    /// Succeeds once every expected message has arrived (see ``expect(_:)``).
    private let drained: EventLoopPromise<Void>

    private var scanner: InboundFrameScanner
    private var inbound = InboundBuffer()
    private var opening: ConnectionOpening
    private var accounting: DeliveryAccounting
    private var latencies: [UInt64] = []
    private var lastReceiveNanos: UInt64 = 0
    private var expectedUnique: Int?

    init(
        plan: SubscriberPlan, counters: LiveCounters, ready: EventLoopPromise<Void>, drained: EventLoopPromise<Void>
    ) throws(LoadGenError) {
        self.plan = plan
        self.opening = ConnectionOpening(
            connectPacket: try WirePackets.connect(
                clientID: plan.clientID, keepAliveSeconds: plan.keepAliveSeconds, login: plan.login,
                protocolVersion: plan.protocolVersion),
            keepAliveSeconds: plan.keepAliveSeconds)
        self.subscribePacket = try WirePackets.subscribe(
            filter: plan.filter, qos: plan.qos, protocolVersion: plan.protocolVersion)
        self.counters = counters
        self.ready = ready
        self.drained = drained
        self.scanner = InboundFrameScanner(path: plan.decodePath, protocolVersion: plan.protocolVersion)
        self.accounting = DeliveryAccounting(publisherCount: plan.publisherCount)
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
        drained.succeed(())  // nothing more can arrive; what is missing is lost
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbound.append(unwrapInboundIn(data))
        let now = NIODeadline.now().uptimeNanoseconds
        var acknowledgements: ByteBuffer?
        var publishes = 0
        let allocator = context.channel.allocator
        do {
            try inbound.forEachFrame(&scanner) { (frame) throws(LoadGenError) in
                switch frame {
                case .publish(let qos, let packetID, let stamp):
                    publishes += 1
                    record(stamp, now: now)
                    switch qos {
                    case .atMostOnce: break
                    case .atLeastOnce:
                        WirePackets.appendAcknowledgement(
                            .puback, packetID: packetID, to: &acknowledgements, allocator: allocator)
                    case .exactlyOnce:
                        WirePackets.appendAcknowledgement(
                            .pubrec, packetID: packetID, to: &acknowledgements, allocator: allocator)
                    }
                case .acknowledgement(.pubrel, let packetID):
                    WirePackets.appendAcknowledgement(
                        .pubcomp, packetID: packetID, to: &acknowledgements, allocator: allocator)
                case .control(.connack(let connack)):
                    guard connack.returnCode == .accepted else {
                        throw .connectionRefused(
                            returnCode: plan.protocolVersion == .v5
                                ? connack.reasonCode.rawValue : connack.returnCode.rawValue)
                    }
                    context.writeAndFlush(wrapOutboundOut(subscribePacket), promise: nil)
                case .control(.disconnect(let disconnect)):
                    throw .disconnectedByBroker(
                        reasonCode: disconnect.reasonCode.rawValue, reason: disconnect.properties.reasonString)
                case .control(.suback(let suback)):
                    guard suback.returnCodes.allSatisfy({ $0 != .failure }) else {
                        throw .subscribeRejected(topicFilter: plan.filter)
                    }
                    ready.succeed(())
                case .acknowledgement, .control:
                    break  // PINGRESP, or traffic a subscriber does not expect: ignored.
                }
            }
        } catch {
            counters.recordFailure(error)
            ready.fail(error)
            context.close(promise: nil)
            return
        }
        if let acknowledgements { context.writeAndFlush(wrapOutboundOut(acknowledgements), promise: nil) }
        if publishes > 0 {
            lastReceiveNanos = now
            counters.received.add(publishes, ordering: .relaxed)
            checkDrained()
        }
    }

    private func record(_ stamp: PayloadStamp?, now: UInt64) {
        guard let stamp else {
            accounting.recordForeign()
            return
        }
        accounting.record(publisher: Int(stamp.publisherIndex), sequence: Int(stamp.sequence))
        if plan.recordsLatency { latencies.append(now &- stamp.sendTimeNanos) }
    }

    /// Sets how many distinct messages this subscriber should end up with; ``drained`` succeeds once it has them.
    func expect(_ uniqueMessages: Int) {
        expectedUnique = uniqueMessages
        checkDrained()
    }

    private func checkDrained() {
        guard let expectedUnique, accounting.unique >= expectedUnique else { return }
        drained.succeed(())
    }

    /// The figures of this subscriber so far.
    func snapshot() -> SubscriberSnapshot {
        SubscriberSnapshot(accounting: accounting, lastReceiveNanos: lastReceiveNanos, latencies: latencies)
    }
}
