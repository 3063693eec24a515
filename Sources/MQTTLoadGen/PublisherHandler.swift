import MQTTCore
import NIOCore

/// What a publisher reports at the end of a run.
struct PublisherSnapshot: Sendable {
    /// Messages written.
    var sent: Int
    /// QoS 1/2 messages acknowledged (PUBACK / PUBCOMP); all sent messages at QoS 0.
    var acknowledged: Int
    /// Monotonic time of the first send (0 if nothing was sent).
    var firstSendNanos: UInt64
    /// Monotonic time of the last send or acknowledgement.
    var lastActivityNanos: UInt64
    /// Bytes of all PUBLISH packets written.
    var publishBytes: Int
    /// One PUBLISH with the topic name and no alias, in bytes.
    var withTopicSize: Int
    /// With topic aliases: every PUBLISH after the first, in bytes (nil without).
    var withAliasSize: Int?
}

/// How a publisher paces and bounds its sending.
struct PublisherPlan: Sendable {
    /// The pre-encoded PUBLISH template's parameters.
    var topic: String
    var qos: QoS
    var payloadSize: Int
    var publisherIndex: UInt32
    /// Stop after this many messages (nil: until ``stop()``).
    var messageLimit: Int?
    /// Messages per second for this publisher (nil: as fast as the window and the socket allow).
    var rate: Double?
    /// How long after the common start this publisher's first message is due. Publisher `i` of `n` is offset by
    /// `i / n` of its period, so the publishers' messages interleave into one evenly spaced stream instead of
    /// leaving together as a burst of `n` (which would measure queueing behind the burst, not latency at the rate).
    var phaseNanos: UInt64 = 0
    /// QoS 1/2 window.
    var inflight: Int
    var clientID: String
    var keepAliveSeconds: UInt16
    var login: WirePackets.Login
    var decodePath: LoadGenConfig.DecodePath
    /// The protocol level of the connection.
    var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// MQTT 5: the first PUBLISH sets Topic Alias 1, every later one carries only the alias.
    var topicAlias: Bool = false
}

/// One publishing connection: CONNECT, then (after ``start()``) batched, pre-encoded PUBLISH packets, with a
/// window of unacknowledged messages at QoS 1/2. Confined to its channel's event loop.
final class PublisherHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Messages written per write call (one flush per batch).
    private static let batchSize = 256
    /// The pacing timer never fires more often than this; at higher rates each firing sends what is due.
    private static let minimumPacerSpacingNanos: UInt64 = 50_000
    /// Packet identifiers run 1...65535.
    private static let packetIDCount = 65_535

    private let plan: PublisherPlan
    private let templates: PublishTemplates
    private let counters: LiveCounters
    /// Succeeds on CONNACK.
    private let ready: EventLoopPromise<Void>
    /// Succeeds when sending has ended and every QoS 1/2 message is acknowledged.
    private let done: EventLoopPromise<Void>

    private var context: ChannelHandlerContext?
    private var scanner: InboundFrameScanner
    private var inbound = InboundBuffer()
    private var opening: ConnectionOpening
    /// The timer that sends the next due message of a rate-paced run.
    private var pacer: Scheduled<Void>?

    private var started = false
    private var stopped = false
    private var sendScheduled = false
    private var sent = 0
    private var acknowledged = 0
    private var inflight = 0
    /// The window: ``PublisherPlan/inflight``, lowered to an MQTT 5 broker's Receive Maximum.
    private var window: Int
    private var publishBytes = 0
    private var inflightIDs: [Bool]
    private var nextPacketID: UInt16 = 1
    private var startNanos: UInt64 = 0
    private var firstSendNanos: UInt64 = 0
    private var lastActivityNanos: UInt64 = 0

    init(
        plan: PublisherPlan, counters: LiveCounters, ready: EventLoopPromise<Void>, done: EventLoopPromise<Void>
    ) throws(LoadGenError) {
        self.plan = plan
        self.templates = try PublishTemplates(
            topic: plan.topic, qos: plan.qos, payloadSize: plan.payloadSize, publisherIndex: plan.publisherIndex,
            protocolVersion: plan.protocolVersion, topicAlias: plan.topicAlias)
        self.opening = ConnectionOpening(
            connectPacket: try WirePackets.connect(
                clientID: plan.clientID, keepAliveSeconds: plan.keepAliveSeconds, login: plan.login,
                protocolVersion: plan.protocolVersion),
            keepAliveSeconds: plan.keepAliveSeconds)
        self.window = plan.inflight
        self.counters = counters
        self.ready = ready
        self.done = done
        self.scanner = InboundFrameScanner(path: plan.decodePath, protocolVersion: plan.protocolVersion)
        self.inflightIDs = plan.qos == .atMostOnce ? [] : Array(repeating: false, count: Self.packetIDCount + 1)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { opening.begin(on: context.channel) }
    }

    func channelActive(context: ChannelHandlerContext) {
        opening.begin(on: context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        opening.end()
        pacer?.cancel()
        ready.fail(LoadGenError.closedDuringHandshake)
        stopped = true
        // A closed connection will never deliver the missing acknowledgements.
        done.succeed(())
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbound.append(unwrapInboundIn(data))
        var acknowledgements: ByteBuffer?
        var released = false
        do {
            try inbound.forEachFrame(&scanner) { (frame) throws(LoadGenError) in
                switch frame {
                case .control(.connack(let connack)):
                    try acceptConnAck(connack)
                    ready.succeed(())
                case .control(.disconnect(let disconnect)):
                    throw .disconnectedByBroker(
                        reasonCode: disconnect.reasonCode.rawValue, reason: disconnect.properties.reasonString)
                case .acknowledgement(.pubrec, let packetID):
                    WirePackets.appendAcknowledgement(
                        .pubrel, packetID: packetID, to: &acknowledgements, allocator: context.channel.allocator)
                case .acknowledgement(.puback, let packetID), .acknowledgement(.pubcomp, let packetID):
                    released = release(packetID) || released
                case .acknowledgement, .publish, .control:
                    break  // PINGRESP, or traffic a publisher does not expect: ignored.
                }
            }
        } catch {
            counters.recordFailure(error)
            ready.fail(error)
            context.close(promise: nil)
            return
        }
        if let acknowledgements { context.writeAndFlush(wrapOutboundOut(acknowledgements), promise: nil) }
        if released {
            lastActivityNanos = NIODeadline.now().uptimeNanoseconds
            sendMore()
            checkDone()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { sendMore() }
        context.fireChannelWritabilityChanged()
    }

    /// Checks CONNACK: refused connections and, with topic aliases, a broker that grants none are errors; an MQTT 5
    /// broker's Receive Maximum lowers the window (sending more would be a protocol error, MQTT-3.3.4-7).
    private func acceptConnAck(_ connack: ConnAckPacket) throws(LoadGenError) {
        guard connack.returnCode == .accepted else {
            throw .connectionRefused(
                returnCode: plan.protocolVersion == .v5 ? connack.reasonCode.rawValue : connack.returnCode.rawValue)
        }
        guard plan.protocolVersion == .v5 else { return }
        if let receiveMaximum = connack.properties.receiveMaximum { window = min(window, Int(receiveMaximum)) }
        if plan.topicAlias {
            let maximum = connack.properties.topicAliasMaximum ?? 0
            guard maximum >= PublishTemplates.alias else { throw .topicAliasesUnavailable(maximum: Int(maximum)) }
        }
    }

    /// Begins sending; `deadline` (if any) ends the sending phase.
    func start(deadline: NIODeadline?) {
        guard !started, let context else { return }
        started = true
        startNanos = NIODeadline.now().uptimeNanoseconds
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        if let deadline {
            context.eventLoop.scheduleTask(deadline: deadline) { bound.value.stop() }
        }
        sendMore()
        checkDone()
    }

    /// Ends the sending phase; the publisher is done once its window drains.
    func stop() {
        stopped = true
        pacer?.cancel()
        checkDone()
    }

    /// The figures of this publisher so far.
    func snapshot() -> PublisherSnapshot {
        PublisherSnapshot(
            sent: sent, acknowledged: plan.qos == .atMostOnce ? sent : acknowledged,
            firstSendNanos: firstSendNanos, lastActivityNanos: lastActivityNanos, publishBytes: publishBytes,
            withTopicSize: templates.withTopicSize, withAliasSize: templates.first == nil ? nil : templates.steady.size)
    }

    private var sendingFinished: Bool {
        stopped || (plan.messageLimit.map { sent >= $0 } ?? false)
    }

    private func checkDone() {
        guard started, sendingFinished, inflight == 0 else { return }
        pacer?.cancel()
        done.succeed(())
    }

    /// How many more messages may be written right now.
    private func allowance(now: UInt64) -> Int {
        if sendingFinished { return 0 }
        var allowed = Self.batchSize
        if let limit = plan.messageLimit { allowed = min(allowed, limit - sent) }
        if plan.qos != .atMostOnce { allowed = min(allowed, window - inflight) }
        if let rate = plan.rate {
            allowed = min(allowed, Self.messagesDue(at: now, since: startNanos &+ plan.phaseNanos, rate: rate) - sent)
        }
        return max(0, allowed)
    }

    /// How many messages of a stream at `rate` per second whose first message is due at `firstDueNanos` are due
    /// at `now`.
    static func messagesDue(at now: UInt64, since firstDueNanos: UInt64, rate: Double) -> Int {
        guard now >= firstDueNanos else { return 0 }
        return Int(Double(now - firstDueNanos) * rate / 1e9) + 1
    }

    /// When the message after the first `sent` of that stream is due.
    static func nextDueNanos(after sent: Int, since firstDueNanos: UInt64, rate: Double) -> UInt64 {
        firstDueNanos &+ UInt64((Double(sent) * 1e9 / rate).rounded(.up))
    }

    /// In a rate-paced run, arms the timer for the next due message, unless the window is full (an
    /// acknowledgement then resumes sending) or a timer is already armed.
    private func armPacer(now: UInt64) {
        guard let rate = plan.rate, pacer == nil, !sendingFinished, let context else { return }
        guard plan.qos == .atMostOnce || inflight < window else { return }
        let due = Self.nextDueNanos(after: sent, since: startNanos &+ plan.phaseNanos, rate: rate)
        let deadline = max(due, now &+ Self.minimumPacerSpacingNanos)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        pacer = context.eventLoop.scheduleTask(deadline: .uptimeNanoseconds(deadline)) {
            bound.value.pacer = nil
            bound.value.sendMore()
        }
    }

    /// Writes one batch, flushes once, and schedules the next batch while the socket and the window allow.
    private func sendMore() {
        guard started, let context, context.channel.isActive, context.channel.isWritable else { return }
        let now = NIODeadline.now().uptimeNanoseconds
        let count = allowance(now: now)
        guard count > 0 else {
            armPacer(now: now)
            return
        }
        if firstSendNanos == 0 { firstSendNanos = now }
        var buffer = context.channel.allocator.buffer(capacity: count * templates.maximumSize)
        let batchStart = buffer.writerIndex
        for _ in 0..<count {
            var packetID: UInt16 = 0
            if plan.qos != .atMostOnce { packetID = claimPacketID() }
            templates.template(forMessage: sent).write(
                into: &buffer, packetID: packetID, sequence: UInt32(truncatingIfNeeded: sent), sendTimeNanos: now)
            sent += 1
        }
        publishBytes += buffer.writerIndex - batchStart
        lastActivityNanos = now
        counters.sent.add(count, ordering: .relaxed)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        checkDone()
        // Yield to the event loop between batches so acknowledgements and other connections get their turn.
        if !sendScheduled, allowance(now: now) > 0 {
            sendScheduled = true
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute {
                bound.value.sendScheduled = false
                bound.value.sendMore()
            }
        } else {
            armPacer(now: now)
        }
    }

    /// The next free packet identifier; the window is far smaller than 65,535, so one is always free.
    private func claimPacketID() -> UInt16 {
        while inflightIDs[Int(nextPacketID)] {
            nextPacketID = nextPacketID == UInt16(Self.packetIDCount) ? 1 : nextPacketID + 1
        }
        let id = nextPacketID
        inflightIDs[Int(id)] = true
        inflight += 1
        nextPacketID = nextPacketID == UInt16(Self.packetIDCount) ? 1 : nextPacketID + 1
        return id
    }

    /// Frees `packetID`; false for an identifier that was not in flight.
    private func release(_ packetID: UInt16) -> Bool {
        guard plan.qos != .atMostOnce, packetID != 0, inflightIDs[Int(packetID)] else { return false }
        inflightIDs[Int(packetID)] = false
        inflight -= 1
        acknowledged += 1
        return true
    }
}
