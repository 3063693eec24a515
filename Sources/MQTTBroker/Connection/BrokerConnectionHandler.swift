import Logging
import MQTTCore
import NIOCore

/// One client connection: decodes bytes into packets, checks them against the ``ConnectionStateMachine``,
/// dispatches each packet type to its handler (`Handlers/`, one per packet type, as mosquitto's `read_handle.c`
/// does to its `handle_*.c`), and writes what the broker core and the session state machines decide. Writes are
/// not flushed per packet; the ``OutputFlusher`` flushes every touched connection once per read batch.
///
/// Lives on the broker core's event loop, like the core itself (hence its `@exclusivity(unchecked)` properties, see
/// ``BrokerCore``). Its socket is reached through a ``ConnectionTransport``: the channel pipeline it sits in, a
/// ``RelayedChannel`` to a socket on another loop, the core's own epoll loop, or a parked socket.
final class BrokerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let core: BrokerCore
    /// The client's address, for log metadata (NIO keeps it in the channel).
    private var remoteAddress: SocketAddress? { transport?.remoteAddress }
    @exclusivity(unchecked) var transport: (any ConnectionTransport)?
    @exclusivity(unchecked) private var decoder: MQTTPacketDecoder
    /// The route this client's last PUBLISH took (``BrokerCore/route(_:from:)``).
    @exclusivity(unchecked) var routeHint: RouteCache<SessionKey>.Hint?
    @exclusivity(unchecked) private var cumulation: ByteBuffer?
    @exclusivity(unchecked) private var stateMachine: ConnectionStateMachine
    /// When this connection's timer (connect timeout, keepalive) is due, in the core's deadline heap; nil when
    /// none is armed. An entry of the heap with another deadline is stale.
    @exclusivity(unchecked) private(set) var timerDeadline: NIODeadline?
    /// Made when someone asks for ``closeFuture`` (shutdown, tests): most connections never need one.
    @exclusivity(unchecked) private var closePromise: EventLoopPromise<Void>?
    /// The protocol level of the client's CONNECT, which every packet to it is encoded for.
    @exclusivity(unchecked) var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// [tls] The listener takes the user name from the client certificate (`use_identity_as_username`); CONNECT's
    /// user name and password are then ignored and the core skips password authentication.
    let usesCertificateIdentity: Bool
    /// [tls] The certificate identity, delivered by the TLS layer after the handshake, before any MQTT byte.
    @exclusivity(unchecked) private(set) var certificateIdentity: TLSClientIdentity?

    /// The session attached by a successful CONNECT; set and cleared by the core.
    @exclusivity(unchecked) var session: BrokerSession?
    /// The will registered by CONNECT; published by the core when the connection ends without DISCONNECT.
    @exclusivity(unchecked) private(set) var will: ConnectPacket.Will?
    /// Whether there are unflushed writes (managed by ``BrokerCore/markDirty(_:)``).
    @exclusivity(unchecked) var isDirty = false
    /// Whether everything written since the last flush acknowledges the client's own publishes (PUBACK, PUBREC,
    /// PUBCOMP): output that may wait for the end of the loop tick (``BrokerCore/flushDirty(deferringAcknowledgements:)``).
    @exclusivity(unchecked) var holdsOnlyAcknowledgements = true
    /// The allocator for encoding: every broker socket uses NIO's default allocator.
    var allocator: ByteBufferAllocator { core.allocator }
    // [flow] flow control (BrokerConnectionHandler+FlowControl.swift).
    /// Bounds the output the client has not read (slow consumer policy).
    @exclusivity(unchecked) var outputGate: PendingOutputGate
    /// Bytes written since the last flush, reported back by the socket's loop once the batch is written.
    @exclusivity(unchecked) var unflushedBytes = 0
    /// Closes the connection when its output stays blocked for `slow_consumer_timeout`.
    @exclusivity(unchecked) var slowConsumerTimer: Scheduled<Void>?
    /// Whether the core paused this connection (publisher back-pressure): no new read batch is decoded.
    @exclusivity(unchecked) var isReadingPausedByCore = false
    /// Whether the pause applies to the read batch in progress as well (the congested session is near its limit).
    @exclusivity(unchecked) var isDecodingHaltedByCore = false
    /// Whether the socket is not read: paused by the core with ``pausedInputLimit`` bytes or more waiting.
    @exclusivity(unchecked) var isSocketReadingPaused = false
    /// Bytes a paused connection still reads from its socket before it stops reading: enough for a client's
    /// window of small messages, so pausing for a few batches costs no system call, and little memory.
    static let pausedInputLimit = 16 * 1024
    // [park] parking idle connections (BrokerConnectionHandler+Parking.swift).
    /// The socket's descriptor when the broker accepted it itself (plain TCP): only such a connection can park.
    /// While on a channel, NIO owns it; while parked, ``ParkedSocket`` does; on the epoll loop,
    /// ``EpollSocketTransport`` does (and such a connection never parks).
    @exclusivity(unchecked) var socketDescriptor: CInt?
    /// When output was last flushed to the connection (when the client was last heard from, the state machine
    /// knows already). Stored per flush with the read batch's time, not per message.
    @exclusivity(unchecked) var lastFlushedAt: NIODeadline
    /// Counts the connection's parkings, so that a stale report of the watcher can be told apart.
    @exclusivity(unchecked) var parkGeneration: UInt32 = 0
    /// A relayed socket is stopping its reads so that the connection can park (when the client had last been
    /// heard from when that was asked).
    @exclusivity(unchecked) var parkRequestedAt: NIODeadline?
    /// A connection that could not park (something was in progress) is looked at again no sooner than this.
    @exclusivity(unchecked) var parkNotBefore = NIODeadline.uptimeNanoseconds(0)

    /// Whether the connection has not been closed yet.
    var isOpen: Bool { stateMachine.isOpen }
    /// Whether CONNECT was accepted and the connection has not been closed.
    var isConnected: Bool { stateMachine.isConnected }
    /// When the client was last heard from (nil until CONNECT is accepted).
    var lastHeardAt: NIODeadline? { stateMachine.lastActivity }

    /// The broker's logger with this connection's remote address and client identifier as metadata. Built when
    /// something is logged — a few times in a connection's life — rather than stored: a stored copy held a
    /// metadata dictionary and two strings per connection, most of an idle connection's own memory after NIO's.
    var logger: Logger {
        var logger = core.logger
        if let remoteAddress {
            logger[metadataKey: "remote"] = "\(remoteAddress)"
        }
        if let clientID = session?.clientID {
            logger[metadataKey: "client"] = "\(clientID)"
        }
        return logger
    }

    /// Completes when the connection has ended (after the channel closed).
    var closeFuture: EventLoopFuture<Void> {
        if closeSignalled { return core.eventLoop.makeSucceededVoidFuture() }
        if let closePromise { return closePromise.futureResult }
        let promise = core.eventLoop.makePromise(of: Void.self)
        closePromise = promise
        return promise.futureResult
    }

    /// The event loop the socket is served on: the core's loop, or another one when relayed (the core's while
    /// parked).
    var socketEventLoop: any EventLoop {
        transport?.socketEventLoop ?? core.eventLoop
    }

    init(core: BrokerCore, usesCertificateIdentity: Bool = false, socketDescriptor: CInt? = nil) {
        self.core = core
        self.usesCertificateIdentity = usesCertificateIdentity
        self.socketDescriptor = socketDescriptor
        self.decoder = MQTTPacketDecoder(maximumPacketSize: core.configuration.maxPacketSize)
        self.lastFlushedAt = core.eventLoop.now
        self.stateMachine = ConnectionStateMachine(acceptedAt: core.eventLoop.now, connectTimeout: core.configuration.connectTimeout)
        self.outputGate = PendingOutputGate(  // [flow]
            limit: core.configuration.maxPendingOutputBytes, timeout: core.configuration.slowConsumerTimeout)
    }

    /// A handler for a socket served on another event loop, through a ``ConnectionRelay``; starts at once.
    convenience init(
        core: BrokerCore, relayedChannel: any Channel, usesCertificateIdentity: Bool = false,
        relay: NIOLoopBound<ConnectionRelay>? = nil, handlerBox: NIOLoopBoundBox<BrokerConnectionHandler?>? = nil,
        socketDescriptor: CInt? = nil
    ) {
        self.init(core: core, usesCertificateIdentity: usesCertificateIdentity, socketDescriptor: socketDescriptor)
        self.transport = RelayedChannel(channel: relayedChannel, relay: relay, handlerBox: handlerBox)
        start()
    }

    /// A handler for a socket served on the core's own epoll loop; starts at once.
    convenience init(core: BrokerCore, epollSocket: EpollSocketTransport) {
        self.init(core: core, socketDescriptor: epollSocket.descriptor)
        epollSocket.attach(self)
        self.transport = epollSocket
        start()
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        // The descriptor, when known, is the one this channel took (a parked connection's comes back on its own).
        attach(PipelineChannel(context: context, descriptor: socketDescriptor))
        if context.channel.isActive {
            start()
        }
    }

    /// Whether `context` is the pipeline this handler currently writes to: after parking, the old channel's last
    /// events (inactive, removed) belong to a socket the connection no longer uses.
    private func isCurrent(_ context: ChannelHandlerContext) -> Bool {
        (transport as? PipelineChannel)?.context === context
    }

    /// Takes `newTransport` as the way to the socket: the first one, or the channel a parked connection comes back
    /// on, which first gets what was written while parked.
    func attach(_ newTransport: any ConnectionTransport) {
        guard let parked = transport as? ParkedSocket else {
            transport = newTransport
            return
        }
        transport = newTransport
        for buffer in parked.pendingWrites {
            newTransport.write(buffer)
        }
        newTransport.flush(reportingWritten: parked.pendingReportedBytes, to: self)
        if parked.closeWhenAttached || !isOpen {
            newTransport.close()
            return
        }
        if isSocketReadingPaused {
            newTransport.setReadingPausedByCore(true)
        }
        core.connectionUnparked(self)
        postponeParking(from: core.eventLoop.now)  // what woke it is about to be read or written: a full delay first
        armTimer()
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    @exclusivity(unchecked) private var started = false

    private func start() {
        guard !started else { return }
        started = true
        stateMachine = ConnectionStateMachine(acceptedAt: core.eventLoop.now, connectTimeout: core.configuration.connectTimeout)
        // [auth] max_connections: close at accept, before reading anything; nothing was registered with the core.
        guard core.connectionOpened(self) else {
            logger.notice("connection refused: max_connections reached", metadata: ["max": "\(core.configuration.maxConnections)"])
            _ = stateMachine.close()
            transport?.close()
            return
        }
        armTimer()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.flusher.readBatchBegins()
        received(unwrapInboundIn(data))
    }

    /// Bytes read from the socket (from the pipeline or a relay).
    func received(_ bytes: ByteBuffer) {
        var bytes = bytes
        core.statistics.bytesReceived += UInt64(bytes.readableBytes)
        if cumulation == nil {
            cumulation = bytes
        } else {
            cumulation?.writeBuffer(&bytes)
        }
        decodeAvailablePackets()
        stopSocketReadsIfPausedInputIsLarge()
    }

    /// Bytes read and not decoded yet.
    var pendingInputBytes: Int { cumulation?.readableBytes ?? 0 }

    /// The socket's read batch is processed: what it wrote (acks to this client, messages to subscribers) leaves
    /// now, before the next socket's batch is read. Flushing per read batch rather than once per loop tick lets
    /// the subscribers read in parallel with the broker's next batch (and a subscriber's output does not pile up
    /// over a whole tick until it drops), and an isolated message does not wait for the rest of the tick. The
    /// end-of-tick flush (``OutputFlusher/markDirty(_:)``) still covers writes made outside a read (timers, relayed
    /// sockets, other connections' closing).
    func channelReadComplete(context: ChannelHandlerContext) {
        core.flusher.readBatchEnds()
        core.flushDirty(deferringAcknowledgements: true)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.flusher.readBatchEnds()
        if isCurrent(context) {
            transportInactive()
        }
        context.fireChannelInactive()
    }

    /// The socket closed (from the pipeline or a relay).
    func transportInactive() {
        close(.connectionLost)
        core.flushDirty()
        signalClosed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard isCurrent(context) else { return }  // [park] the channel left behind when parking
        self.transport = nil
        signalClosed()
    }

    /// A relayed socket was removed from its pipeline, or an epoll socket closed: nothing more can be written to it.
    func relayRemoved() {
        transport = nil
        signalClosed()
    }

    @exclusivity(unchecked) private var closeSignalled = false

    func signalClosed() {
        guard !closeSignalled else { return }
        closeSignalled = true
        closePromise?.succeed(())
        closePromise = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let identity = event as? TLSClientIdentity {
            certificateIdentified(identity)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// [tls] The TLS handshake verified the client certificate (from the pipeline or a relay).
    func certificateIdentified(_ identity: TLSClientIdentity) {
        certificateIdentity = identity
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        core.flusher.readBatchEnds()
        guard isCurrent(context) else { return }
        transportFailed("\(error)")
    }

    /// The socket reported an error (from the pipeline or a relay).
    func transportFailed(_ description: String) {
        logger.debug("connection error", metadata: ["error": "\(description)"])
        close(.connectionLost)
        core.flushDirty()
    }

    // MARK: Decoding

    func decodeAvailablePackets() {
        // [flow] A paused publisher's next batches are decoded up to their first PUBLISH, which waits with everything
        // behind it: its other packets (PUBREL, PINGREQ, acknowledgements) are still answered, so its own window
        // keeps moving and the batch it sends at its resume is a full one. The batch in progress when it was paused
        // goes on, unless the core halts it: then the same rule applies from the next packet on.
        guard var buffer = cumulation else { return }
        let pausedAtStart = isReadingPausedByCore
        cumulation = nil
        defer {
            if buffer.readableBytes > 0, stateMachine.isOpen {
                cumulation = buffer
            }
        }
        // One clock read per batch: the keepalive only needs to know that the client was heard from in this batch.
        let now = core.now
        while stateMachine.isOpen {
            if pausedAtStart || isDecodingHaltedByCore,
                let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
                first >> 4 == PacketType.publish.rawValue
            {
                return
            }
            // Unwrapped as it is decoded and moved into `handle`, which consumes it: destroying it there is cheaper
            // than keeping an optional in this loop and destroying that.
            let packet: MQTTPacket
            do {
                guard let decoded = try decoder.decode(from: &buffer) else { return }
                packet = decoded
            } catch {
                rejectMalformed(error)
                return
            }
            handle(consume packet, receivedAt: now)
        }
    }

    /// The codec refused the bytes. Before CONNECT was accepted, an error that has a CONNACK code (e.g. an
    /// unsupported protocol level, MQTT-3.1.2-2) is answered with that CONNACK first.
    private func rejectMalformed(_ error: MQTTCodecError) {
        if !stateMachine.isConnected, let code = error.connectReturnCode {
            write(.connack(ConnAckPacket(sessionPresent: false, returnCode: code)))
        }
        close(.malformedPacket(error))
    }

    // MARK: Dispatch

    private func handle(_ packet: consuming MQTTPacket, receivedAt now: NIODeadline) {
        let type = packet.type
        switch stateMachine.packetReceived(type, now: now) {
        case .ignore:
            return
        case .close(let reason):
            close(reason)
            return
        case .process:
            core.statistics.messagesReceived += 1
        }
        if core.logsEveryPacket {
            logger.trace("received", metadata: ["packet": "\(type)"])
        }
        switch consume packet {
        case .connect(let connect): ConnectHandler.handle(connect, on: self)
        case .publish(let publish): PublishHandler.handle(publish, on: self)
        case .puback(let puback): PubAckHandler.handle(puback, on: self)
        case .pubrec(let pubrec): PubRecHandler.handle(pubrec, on: self)
        case .pubrel(let pubrel): PubRelHandler.handle(pubrel, on: self)
        case .pubcomp(let pubcomp): PubCompHandler.handle(pubcomp, on: self)
        case .subscribe(let subscribe): SubscribeHandler.handle(subscribe, on: self)
        case .unsubscribe(let unsubscribe): UnsubscribeHandler.handle(unsubscribe, on: self)
        case .pingreq: PingHandler.handle(on: self)
        case .disconnect: DisconnectHandler.handle(on: self)
        case .connack, .suback, .unsuback, .pingresp:
            // The state machine already refuses these; kept explicit so the switch has no default.
            close(.protocolViolation(.serverOnlyPacket(type)))
        }
    }

    // MARK: Connection state the handlers change

    /// CONNECT was accepted: packets are now decoded at the client's protocol level, its will (nil when the ACL
    /// refused it) is kept for an unclean end, and the keepalive replaces the connect timeout.
    func connectAccepted(_ connect: ConnectPacket, will: ConnectPacket.Will?) {
        decoder.protocolVersion = connect.protocolVersion
        self.will = will
        stateMachine.connectAccepted(keepAliveSeconds: connect.keepAliveSeconds, now: core.eventLoop.now)
        armTimer()
    }

    /// The session of a connected client. The state machine only lets packets other than CONNECT through after
    /// CONNECT was accepted, so a missing session means the connection is being torn down.
    func attachedSession() -> BrokerSession? {
        guard let session else {
            close(.connectionLost)
            return nil
        }
        return session
    }

    // MARK: Timer

    func armTimer() {
        timerDeadline = nil
        guard let deadline = earliest(stateMachine.nextDeadline, parkCheckDeadline) else { return }
        scheduleTimer(at: deadline)
    }

    private func earliest(_ first: NIODeadline?, _ second: NIODeadline?) -> NIODeadline? {
        guard let first else { return second }
        guard let second else { return first }
        return min(first, second)
    }

    private func scheduleTimer(at deadline: NIODeadline) {
        timerDeadline = deadline
        core.armConnectionTimer(self, at: deadline)
    }

    /// The core's deadline timer reached ``timerDeadline``.
    func timerFired(now: NIODeadline) {
        timerDeadline = nil
        if isReadingPausedByCore {
            // [flow] A paused client may not be heard (its PINGREQ can wait behind a PUBLISH): check again later.
            scheduleTimer(at: now + .seconds(1))
            return
        }
        var next: NIODeadline?
        switch stateMachine.timerFired(now: now) {
        case .rearm(let deadline):
            next = deadline
        case .close(let reason):
            close(reason, alreadyClosedInStateMachine: true)
            return
        case .stop:
            break
        }
        if let parkAt = parkCheckDeadline, parkAt <= now {
            considerParking(now: now)
        }
        if let deadline = earliest(next, parkCheckDeadline) {
            scheduleTimer(at: deadline)
        }
    }

    /// [park] Whether nothing is waiting in the connection itself: no partial packet, no output that has not left
    /// memory, no pause. (The session's state is checked by the caller.)
    var hasNothingPending: Bool {
        cumulation == nil && output == nil && !isDirty && unflushedBytes == 0 && outputGate.pendingBytes == 0
            && !outputGate.isBlocked && !isReadingPausedByCore && stateMachine.isConnected
    }

    // MARK: Writing

    /// Small packets written since the last hand-over to the transport, coalesced into one buffer: the acks and
    /// PUBLISHes of one batch leave as one write instead of one buffer (and one allocation) each.
    @exclusivity(unchecked) private var output: ByteBuffer?
    /// The coalescing buffer's first size: a batch of acks and small PUBLISHes fits, and it stays below glibc's
    /// large-chunk threshold (1,024 bytes), whose allocations first consolidate every freed small chunk.
    static let outputInitialCapacity = 512
    /// Coalesced output above this size is handed to the transport at once, so one burst cannot grow it unbounded.
    static let outputHandOverThreshold = 64 * 1024

    /// The coalescing buffer, taken on first use after each hand-over from the core's written buffers, or allocated.
    private func withOutput(_ body: (inout ByteBuffer) -> Void) {
        // Moved out and back (`take`, `consume`), never copied: a copy is a retain and release per packet.
        var buffer = output.take() ?? core.takeOutputBuffer() ?? allocator.buffer(capacity: Self.outputInitialCapacity)
        body(&buffer)
        let handOver = buffer.readableBytes >= Self.outputHandOverThreshold
        output = consume buffer
        if handOver {
            handOverOutput()
        }
    }

    /// Hands the coalesced bytes to the transport (not flushed).
    private func handOverOutput() {
        guard let buffer = output.take() else { return }
        guard buffer.readableBytes > 0, let transport else { return }
        transport.write(buffer, ownBuffer: true)
    }

    /// Encodes and writes a packet without flushing.
    func write(_ packet: MQTTPacket) {
        guard transport != nil else { return }
        let protocolVersion = self.protocolVersion
        let written = encodeIntoOutput(describing: "\(packet.type)") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(packet, protocolVersion: protocolVersion, into: &buffer)
        }
        guard written > 0 else { return }
        switch packet {
        case .puback, .pubrec, .pubcomp: break
        default: holdsOnlyAcknowledgements = false
        }
        noteWritten(written)
    }

    /// Writes a PUBACK, PUBREC, PUBREL or PUBCOMP without flushing: its four bytes straight into the coalescing
    /// buffer, with no packet value to build, switch over and destroy (a QoS 2 message takes three).
    func writeAcknowledgement(_ acknowledgement: MQTTAcknowledgement) {
        guard transport != nil else { return }
        let written = encodeIntoOutput(describing: "\(acknowledgement.kind)") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(acknowledgement, into: &buffer)
        }
        guard written > 0 else { return }
        if acknowledgement.kind == .pubrel { holdsOnlyAcknowledgements = false }  // a PUBREL answers a delivery
        noteWritten(written)
    }

    /// Runs `encode` on the coalescing buffer and returns the bytes it wrote; 0 when the encoder refused the packet,
    /// which is logged and leaves the buffer as it was. Always inlined: it runs for every packet written, and as a call
    /// it would cost a call's overhead on each.
    @inline(__always)
    private func encodeIntoOutput(
        describing packet: @autoclosure () -> String, _ encode: (inout ByteBuffer) throws(MQTTCodecError) -> Void
    ) -> Int {
        var written = 0
        withOutput { buffer in
            let start = buffer.writerIndex
            do {
                try encode(&buffer)
            } catch {
                buffer.moveWriterIndex(to: start)
                logger.error("could not encode outgoing packet", metadata: ["packet": "\(packet())", "error": "\(error)"])
                return
            }
            written = buffer.writerIndex - start
        }
        return written
    }

    /// Counts a packet of `bytes` written into the coalescing buffer and marks the connection for the next flush.
    private func noteWritten(_ bytes: Int) {
        core.statistics.messagesSent += 1
        core.statistics.bytesSent += UInt64(bytes)
        noteHanded(bytes)  // [flow]
        core.flusher.markDirty(self)
    }

    /// Writes one outbound PUBLISH without flushing: encoded straight into the coalescing buffer, with a large
    /// payload written behind it as its own (shared, not copied) buffer.
    func writePublish(_ delivery: OutboundDelivery) {
        guard let transport else { return }
        let payload = delivery.message.payload
        let inline = payload.readableBytes <= PublishEncoding.inlinePayloadLimit
        var headerBytes = 0
        withOutput { buffer in
            let start = buffer.writerIndex
            PublishEncoding.write(delivery, includingPayload: inline, into: &buffer)
            headerBytes = buffer.writerIndex - start
        }
        if !inline {
            handOverOutput()
            transport.write(payload)
        }
        notePublishWritten(bytes: headerBytes + (inline ? 0 : payload.readableBytes))
    }

    /// Writes an already encoded PUBLISH (shared between subscribers for QoS 0) without flushing. A small one is
    /// copied into the coalescing buffer; a large one goes out as its shared buffers.
    func writeEncodedPublish(_ encoded: PublishEncoding.Encoded) {
        guard let transport else { return }
        if let payload = encoded.payload {
            handOverOutput()
            transport.write(encoded.head)
            transport.write(payload)
        } else {
            withOutput { $0.writeImmutableBuffer(encoded.head) }
        }
        notePublishWritten(bytes: encoded.byteCount)
    }

    private func notePublishWritten(bytes: Int) {
        holdsOnlyAcknowledgements = false
        core.statistics.messagesSent += 1
        core.statistics.publishSent += 1
        core.statistics.bytesSent += UInt64(bytes)
        noteHanded(bytes, delivery: true)  // [flow]
        core.flusher.markDirty(self)
    }

    /// Writes what an outbound-flow event decided, without flushing.
    func write(_ actions: [OutboundAction]) {
        for action in actions {
            switch action {
            case .publish(let delivery):
                writePublish(delivery)
            case .pubrel(let packetID):
                writeAcknowledgement(MQTTAcknowledgement(.pubrel, packetID: packetID))
            }
        }
    }

    /// Flushes pending writes (called by the core once per batch, `now` being the batch's time).
    func flushNow(at now: NIODeadline) {
        isDirty = false
        holdsOnlyAcknowledgements = true
        lastFlushedAt = now  // [park]
        handOverOutput()
        flushTransport()
    }

    // MARK: Closing

    /// Ends the connection for `reason`: the single place that logs, detaches the session, lets the core
    /// publish the will, flushes what is pending (e.g. a refusing CONNACK) and closes the socket. Idempotent.
    func close(_ reason: CloseReason) {
        close(reason, alreadyClosedInStateMachine: false)
    }

    private func close(_ reason: CloseReason, alreadyClosedInStateMachine: Bool) {
        guard stateMachine.close() || alreadyClosedInStateMachine else { return }
        timerDeadline = nil
        slowConsumerTimer?.cancel()  // [flow]
        slowConsumerTimer = nil
        cumulation = nil
        log(reason)
        core.connectionEnded(self, reason: reason)
        will = nil
        if let parked = transport as? ParkedSocket {
            closeParked(parked)
            return
        }
        if let transport {
            isDirty = false
            handOverOutput()
            flushTransport()
            transport.close()
        }
    }

    private func log(_ reason: CloseReason) {
        let metadata: Logger.Metadata = ["reason": "\(reason)"]
        switch reason {
        case .clientDisconnected, .connectionLost, .takenOver, .serverShutdown:
            logger.info("client disconnected", metadata: metadata)
        case .keepaliveExpired, .connectTimeout, .connectRejected, .slowConsumer:
            logger.notice("connection closed", metadata: metadata)
        case .malformedPacket, .protocolViolation:
            logger.warning("connection closed on protocol error", metadata: metadata)
        }
    }
}
