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
final class BrokerConnectionHandler {
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
    /// The client announced itself as a bridge (protocol level 0x84/0x85, mosquitto's `try_private`).
    @exclusivity(unchecked) var isBridgeClient = false
    /// The listener takes the user name from the client certificate (`use_identity_as_username`); CONNECT's
    /// user name and password are then ignored and the core skips password authentication.
    let usesCertificateIdentity: Bool
    /// The certificate identity, delivered by the TLS layer after the handshake, before any MQTT byte.
    @exclusivity(unchecked) private(set) var certificateIdentity: TLSClientIdentity?

    /// The session attached by a successful CONNECT; set and cleared by the core.
    @exclusivity(unchecked) var session: BrokerSession?
    /// The will, topic aliases and pending authentication, which most idle connections never have; nil until one
    /// is set (see ``ConnectionExtras``).
    @exclusivity(unchecked) var extras: ConnectionExtras?
    /// What was written since the last flush (coalesced small packets, bytes handed over, dirty flags).
    @exclusivity(unchecked) var output = ConnectionOutput()
    /// Bounds the output the client has not read (slow consumer policy, ``ConnectionFlowControl``).
    @exclusivity(unchecked) var outputGate: PendingOutputGate
    /// Closes the connection when its output stays blocked for `slow_consumer_timeout`.
    @exclusivity(unchecked) var slowConsumerTimer: Scheduled<Void>?
    /// Reading paused on behalf of the core (publisher back-pressure, ``ConnectionFlowControl``).
    @exclusivity(unchecked) var readPause = ReadPause()
    /// The socket's descriptor when the broker accepted it itself (plain TCP): only such a connection can park.
    /// While on a channel, NIO owns it; while parked, ``ParkedSocket`` does; on the epoll loop,
    /// ``EpollSocketTransport`` does (and such a connection never parks).
    @exclusivity(unchecked) var socketDescriptor: CInt?
    /// Parking bookkeeping (``ConnectionParking``).
    @exclusivity(unchecked) var parking: ParkingState

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
        self.decoder = MQTTPacketDecoder(maximumPacketSize: core.configuration.maxPacketSize, acceptsVersion5: true)
        self.parking = ParkingState(now: core.eventLoop.now)
        self.stateMachine = ConnectionStateMachine(acceptedAt: core.eventLoop.now, connectTimeout: core.configuration.connectTimeout)
        self.outputGate = PendingOutputGate(
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
        if readPause.isSocketPaused {
            newTransport.setReadingPausedByCore(true)
        }
        core.parking?.unparked()
        postponeParking(from: core.eventLoop.now)  // what woke it is about to be read or written: a full delay first
        armTimer()
    }

    @exclusivity(unchecked) private var started = false

    func start() {
        guard !started else { return }
        started = true
        stateMachine = ConnectionStateMachine(acceptedAt: core.eventLoop.now, connectTimeout: core.configuration.connectTimeout)
        // max_connections: close at accept, before reading anything; nothing was registered with the core.
        guard core.connectionOpened(self) else {
            logger.notice("connection refused: max_connections reached", metadata: ["max": "\(core.configuration.maxConnections)"])
            _ = stateMachine.close()
            transport?.close()
            return
        }
        armTimer()
    }

    /// Bytes read from the socket (from the pipeline or a relay).
    func received(_ bytes: ByteBuffer) {
        guard stateMachine.isOpen else { return }  // a lingering close reads on, and drops what arrives
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

    /// The socket closed (from the pipeline or a relay).
    func transportInactive() {
        close(.connectionLost)
        core.flushDirty()
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

    /// The TLS handshake verified the client certificate (from the pipeline or a relay).
    func certificateIdentified(_ identity: TLSClientIdentity) {
        certificateIdentity = identity
    }

    /// The socket reported an error (from the pipeline or a relay).
    func transportFailed(_ description: String) {
        logger.debug("connection error", metadata: ["error": "\(description)"])
        close(.connectionLost)
        core.flushDirty()
    }

    // MARK: Decoding

    func decodeAvailablePackets() {
        // A paused publisher's next batches are decoded up to their first PUBLISH, which waits with everything
        // behind it: its other packets (PUBREL, PINGREQ, acknowledgements) are still answered, so its own window
        // keeps moving and the batch it sends at its resume is a full one. The batch in progress when it was paused
        // goes on, unless the core halts it: then the same rule applies from the next packet on.
        guard var buffer = cumulation else { return }
        let pausedAtStart = readPause.isPaused
        cumulation = nil
        defer {
            if buffer.readableBytes > 0, stateMachine.isOpen {
                cumulation = buffer
            }
        }
        // One clock read per batch: the keepalive only needs to know that the client was heard from in this batch.
        let now = core.now
        while stateMachine.isOpen {
            if readPause.publishWaits(batchBeganPaused: pausedAtStart),
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
                if error == .unexpectedAuthPacket, decodeAuthentication(from: &buffer) { continue }
                rejectMalformed(error)
                return
            }
            handle(consume packet, receivedAt: now)
        }
    }

    /// Decodes and handles the AUTH packet at the front of `buffer` (the plain decoder refuses it); false when it
    /// cannot be decoded, which the caller then reports.
    private func decodeAuthentication(from buffer: inout ByteBuffer) -> Bool {
        guard case .auth(let auth)?? = try? decoder.decodePacketOrAuth(from: &buffer) else { return false }
        AuthHandler.handle(auth, on: self)
        return true
    }

    /// The codec refused the bytes. Before CONNECT was accepted, an error that has a CONNACK code (e.g. an
    /// unsupported protocol level, MQTT-3.1.2-2) is answered with that CONNACK first. After CONNECT, ``close(_:)``
    /// tells an MQTT 5 client why; an AUTH is a protocol error, as no enhanced authentication is ever started.
    private func rejectMalformed(_ error: MQTTCodecError) {
        if !stateMachine.isConnected, let code = error.connectReturnCode {
            write(.connack(ConnAckPacket(sessionPresent: false, returnCode: code)))
        }
        close(error == .unexpectedAuthPacket ? .protocolViolation(.unexpectedAuth) : .malformedPacket(error))
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
        case .disconnect(let disconnect): DisconnectHandler.handle(disconnect, on: self)
        case .connack, .suback, .unsuback, .pingresp:
            // The state machine already refuses these; kept explicit so the switch has no default.
            close(.protocolViolation(.serverOnlyPacket(type)))
        }
    }

    // MARK: Connection state the handlers change

    /// CONNECT was accepted: packets are now decoded at the client's protocol level, its will (nil when the ACL
    /// refused it) is kept for an unclean end, and the keepalive (the client's, or the one the broker chose for an
    /// MQTT 5 client) replaces the connect timeout.
    func connectAccepted(_ connect: ConnectPacket, will: ConnectPacket.Will?, keepAliveSeconds: UInt16) {
        decoder.protocolVersion = connect.protocolVersion
        if let maximum = connect.properties.topicAliasMaximum, maximum > 0 {
            outboundTopicAliases = OutboundTopicAliases(maximum: maximum)
        }
        self.will = will
        stateMachine.connectAccepted(keepAliveSeconds: keepAliveSeconds, now: core.eventLoop.now)
        armTimer()
    }

    /// Enhanced authentication began: the client's AUTH packets arrive before CONNECT is accepted, in MQTT 5 form.
    func decodeVersion5BeforeConnAck() {
        decoder.protocolVersion = .v5
    }

    /// Forgets the will: the connection is taken over by a client that continues its session.
    func discardWill() {
        will = nil
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
        core.timers.arm(self, at: deadline)
    }

    /// The core's deadline timer reached ``timerDeadline``.
    func timerFired(now: NIODeadline) {
        timerDeadline = nil
        if readPause.isPaused {
            // A paused client may not be heard (its PINGREQ can wait behind a PUBLISH): check again later.
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

    /// Whether nothing is waiting in the connection itself: no partial packet, no output that has not left
    /// memory, no pause. (The session's state is checked by the caller.)
    var hasNothingPending: Bool {
        cumulation == nil && output.isEmpty && outputGate.pendingBytes == 0 && !outputGate.isBlocked
            && !readPause.isPaused && stateMachine.isConnected
    }

    // MARK: Closing

    /// Ends the connection for `reason`: the single place that logs, detaches the session, lets the core
    /// publish the will, flushes what is pending (e.g. a refusing CONNACK) and closes the socket. Idempotent.
    func close(_ reason: CloseReason) {
        close(reason, alreadyClosedInStateMachine: false)
    }

    private func close(_ reason: CloseReason, alreadyClosedInStateMachine: Bool) {
        let wasConnected = stateMachine.isConnected || reason == .keepaliveExpired
        guard stateMachine.close() || alreadyClosedInStateMachine else { return }
        // An MQTT 5 client is told why the server closes (MQTT 5.0 4.13.2): one DISCONNECT with the reason code.
        var linger: TimeAmount?
        if wasConnected, protocolVersion == .v5, let code = reason.disconnectReasonCode {
            write(.disconnect(DisconnectPacket(reasonCode: code)))
            linger = Self.disconnectLinger
        }
        timerDeadline = nil
        slowConsumerTimer?.cancel()
        slowConsumerTimer = nil
        cumulation = nil
        log(reason)
        core.connectionEnded(self, reason: reason)
        will = nil
        if let parked = transport as? ParkedSocket {
            output.handOver(to: parked)
            closeParked(parked, writingPendingOutput: true)
            return
        }
        if let transport {
            output.handOver(to: transport)
            flushTransport()
            if let linger {
                transport.close(lingering: linger)
            } else {
                transport.close()
            }
        }
    }

    /// How long a connection closed with an MQTT 5 DISCONNECT keeps reading (and dropping) what the client still
    /// sends, so that its reset does not destroy the DISCONNECT before the client reads it.
    static let disconnectLinger = TimeAmount.seconds(1)

    private func log(_ reason: CloseReason) {
        let metadata: Logger.Metadata = ["reason": "\(reason)"]
        switch reason {
        case .clientDisconnected, .clientDisconnectedWithWill, .connectionLost, .takenOver, .serverShutdown:
            logger.info("client disconnected", metadata: metadata)
        case .keepaliveExpired, .connectTimeout, .connectRejected, .slowConsumer:
            logger.notice("connection closed", metadata: metadata)
        case .malformedPacket, .protocolViolation:
            logger.warning("connection closed on protocol error", metadata: metadata)
        }
    }
}
