import EpollEventLoop
import Logging
import MQTTCore
import NIOCore

/// All broker state: sessions, the subscription index, the retained store and the statistics.
///
/// Confined to one event loop (like mosquitto's single thread): every method must be called on ``eventLoop``, and
/// the connection handlers of every client live on that same loop, so the message path takes no locks. The
/// sockets themselves may be served on other loops (see ``ConnectionRelay``). Nothing in here is global, so a later
/// version can run one core per loop and route between them.
///
/// Exclusivity: the stored properties of the core and of the other classes confined to its loop (connection
/// handlers, sessions, the subscription trie, the transports) are `@exclusivity(unchecked)`. One thread touches
/// them, so no two accesses can overlap across threads; the compiler's static exclusivity checks still apply, and
/// the dynamic ones cost about 7% of the CPU on the message path (fan-in QoS 2: 109k → 117k msg/s, pairs QoS 1:
/// 238k → 259k msg/s, medians of 4 alternating runs).
final class BrokerCore {
    /// The broker version announced on `$SYS/broker/version`.
    static let version = "mqttchat 0.1.0"

    let configuration: BrokerConfiguration
    let logger: Logger
    /// Whether every received packet is logged (trace level): read once, because asking the logger
    /// copies its handler on every packet.
    let logsEveryPacket: Bool
    let eventLoop: any EventLoop
    /// The allocator outgoing packets are encoded with (the one NIO gives every socket by default).
    let allocator = ByteBufferAllocator()
    /// When the core was created, for `$SYS/broker/uptime`.
    let startedAt: NIODeadline

    @exclusivity(unchecked) var statistics = BrokerStatistics()
    /// Keyed by the identifier's bytes: two identifiers that only Unicode calls equal are two clients.
    @exclusivity(unchecked) private var sessionsByClientID: [UTF8Key<String>: BrokerSession] = [:]
    @exclusivity(unchecked) private(set) var sessionsByKey: [SessionKey: BrokerSession] = [:]
    private let subscriptionIndex = SubscriptionIndex<SessionKey>()
    let retainedStore = RetainedStore()
    /// Every open connection, connected or still waiting for CONNECT, for shutdown.
    @exclusivity(unchecked) private(set) var connections: [ObjectIdentifier: BrokerConnectionHandler] = [:]
    /// Connections written to since the last flush.
    @exclusivity(unchecked) private var dirtyConnections: [BrokerConnectionHandler] = []
    /// The list ``flushDirty()`` hands back for the next tick's dirty connections.
    @exclusivity(unchecked) private var spareDirtyConnections: [BrokerConnectionHandler] = []
    @exclusivity(unchecked) private var nextSessionKey: UInt64 = 0
    @exclusivity(unchecked) private var nextAssignedID: UInt64 = 0
    @exclusivity(unchecked) private(set) var isShuttingDown = false
    @exclusivity(unchecked) private var sysTask: Scheduled<Void>?
    /// Connection deadlines and the one timer armed for the earliest (BrokerCore+Deadlines.swift).
    @exclusivity(unchecked) var connectionDeadlines = DeadlineHeap<ObjectIdentifier>()
    @exclusivity(unchecked) var deadlineTimer: Scheduled<Void>?
    @exclusivity(unchecked) var deadlineTimerAt: NIODeadline?
    @exclusivity(unchecked) var isFiringDeadlines = false
    // [flow] publisher back-pressure (BrokerCore+FlowControl.swift); nil when `backpressure_stall_ms` is 0.
    @exclusivity(unchecked) var backpressure: PublisherBackpressure<ObjectIdentifier, SessionKey>?
    @exclusivity(unchecked) var stallCheckTask: Scheduled<Void>?
    /// [flow] The emptied array of back-pressure actions, kept for the next use (``takeBackpressureActions()``).
    @exclusivity(unchecked) var spareBackpressureActions: [PublisherBackpressure<ObjectIdentifier, SessionKey>.Action] = []
    /// [persist] Durable persistence (Persistence/); nil when off, which keeps every hook a nil check.
    @exclusivity(unchecked) var persistence: PersistenceStore?
    // [park] parking idle connections (BrokerCore+Parking.swift); nil when parking is off or sockets are NIO's.
    /// Watches parked sockets (and the plain listeners).
    @exclusivity(unchecked) var socketWatcher: SocketWatcher?
    /// Gives sockets to NIO: newly accepted ones, and parked ones coming back.
    @exclusivity(unchecked) var socketAdopter: SocketAdopter?
    /// The parked connections, by the descriptor the watcher reports.
    @exclusivity(unchecked) var parkedConnections: [CInt: BrokerConnectionHandler] = [:]
    /// How many times connections parked and came back (diagnostics and tests).
    @exclusivity(unchecked) var parkCounts = ParkCounts()

    init(configuration: BrokerConfiguration, logger: Logger, eventLoop: any EventLoop) {
        self.configuration = configuration
        self.logger = logger
        self.logsEveryPacket = logger.logLevel <= .trace
        self.eventLoop = eventLoop
        self.startedAt = eventLoop.now
        self.backpressure = configuration.backpressureStallTimeout.map { PublisherBackpressure(stallTimeout: $0) }  // [flow]
    }

    /// The number of sessions with a connection attached.
    @exclusivity(unchecked) private(set) var connectedClientCount = 0

    /// The number of sessions, connected or not.
    var sessionCount: Int { sessionsByKey.count }

    /// The number of (client, filter) subscriptions.
    var subscriptionCount: Int { subscriptionIndex.count }

    /// How many distinct event loops the open connections' sockets are served on (diagnostics and tests).
    var socketEventLoopsInUse: Int {
        Set(connections.values.map { ObjectIdentifier($0.socketEventLoop) }).count
    }

    /// The session stored for `clientID`, if any.
    func session(forClientID clientID: String) -> BrokerSession? {
        sessionsByClientID[UTF8Key(clientID)]
    }

    // MARK: Connections

    /// A socket was accepted. Returns false (and keeps nothing) when `max_connections` sockets are already open.
    func connectionOpened(_ connection: BrokerConnectionHandler) -> Bool {
        eventLoop.assertInEventLoop()
        // [auth] max_connections (Auth/ConnectionLimit).
        guard ConnectionLimit(maxConnections: configuration.maxConnections).admits(openConnections: connections.count) else { return false }
        connections[ObjectIdentifier(connection)] = connection
        return true
    }

    /// The outcome of CONNECT processing.
    enum ConnectDecision {
        /// Send CONNACK 0 with this session-present flag; the connection is attached to `session`.
        case accepted(session: BrokerSession, sessionPresent: Bool)
        /// Send CONNACK with this code (when the protocol level allows it) and close.
        case rejected(ConnectReturnCode)
    }

    /// Handles CONNECT (MQTT 3.1.1 section 3.1.4): authentication, client identifier rules, takeover of an
    /// existing connection, and session creation, resumption or discarding.
    func connect(_ packet: ConnectPacket, connection: BrokerConnectionHandler) -> ConnectDecision {
        eventLoop.assertInEventLoop()
        guard packet.protocolVersion != .v5 else { return .rejected(.unacceptableProtocolVersion) }

        var clientID = packet.clientIdentifier
        if clientID.isEmpty {
            guard packet.cleanSession else { return .rejected(.identifierRejected) }
            clientID = assignClientID()
        }
        // [tls] use_identity_as_username: the verified client certificate authenticated the client.
        if !connection.usesCertificateIdentity, let refusal = authenticate(packet, clientID: clientID) {
            return .rejected(refusal)
        }

        // Takeover: the old connection ends without DISCONNECT, so its will is published (MQTT-3.1.4-2).
        if let existing = sessionsByClientID[UTF8Key(clientID)], let old = existing.connection {
            old.close(.takenOver)
        }

        let sessionPresent: Bool
        let session: BrokerSession
        if let existing = sessionsByClientID[UTF8Key(clientID)], !packet.cleanSession {
            session = existing
            sessionPresent = true
        } else {
            if let existing = sessionsByClientID[UTF8Key(clientID)] {
                removeSession(existing)
            }
            session = makeSession(clientID: clientID, cleanSession: packet.cleanSession)
            sessionPresent = false
        }
        session.cleanSession = packet.cleanSession
        // [auth] the ACL rules of this connection's identity (Auth/ClientAccessPolicy).
        session.accessPolicy = ClientAccessPolicy(acl: configuration.accessControl, clientID: clientID, username: packet.username)
        session.connection = connection
        connection.session = session
        if !sessionPresent, !packet.cleanSession { persistence?.sessionCreated(session) }  // [persist]
        connectedClientCount += 1
        statistics.maximumConnected = max(statistics.maximumConnected, connectedClientCount)
        return .accepted(session: session, sessionPresent: sessionPresent)
    }

    /// After CONNACK: re-send what the session still owes the client, then the queue (MQTT-4.4.0-1).
    func resumeDelivery(for session: BrokerSession) {
        perform(session.outbound.resume(), for: session)
    }

    /// A connection ended for `reason`: detaches it from its session, discards a clean session and publishes the
    /// will when the reason calls for it. Called exactly once per connection, by the connection itself.
    func connectionEnded(_ connection: BrokerConnectionHandler, reason: CloseReason) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(connection)] = nil
        backpressure?.connectionClosed(ObjectIdentifier(connection))  // [flow]
        guard let session = connection.session else { return }
        connection.session = nil
        if session.connection === connection {
            session.connection = nil
            connectedClientCount -= 1
            session.outbound.suspend()
            sessionWentOffline(session)  // [flow] offline sessions hold no publisher back
            if session.cleanSession {
                removeSession(session)
            }
        }
        if reason.publishesWill, !isShuttingDown, let will = connection.will {
            logger.debug("publishing will", metadata: ["client": "\(session.clientID)", "topic": "\(will.topic)"])
            route(
                BrokerMessage(
                    topic: will.topic,
                    payload: will.payload,
                    qos: min(will.qos, configuration.maxQoS),
                    retain: will.retain && configuration.retainAvailable
                )
            )
        }
    }

    // MARK: Messages

    /// Routes an application message: updates the retained store and delivers a copy to every matching session,
    /// once per session at `min(message QoS, highest granted QoS)` (MQTT-3.3.5-1), with RETAIN cleared
    /// (MQTT-3.3.1-9). An empty retained message deletes the stored one and is still forwarded.
    /// `publisher` is the connection the message came from, if any: it is paused when the message leaves an online
    /// session's queue above its high watermark (publisher back-pressure, see ``PublisherBackpressure``).
    func route(_ message: consuming BrokerMessage, from publisher: BrokerConnectionHandler? = nil) {
        // Taken, not borrowed, and changed in place: a copy of the message here costs a retain and a release of its
        // topic and payload per publish.
        // QoS 1/2 and retained messages may be kept (in flight, queued, retained): not as slices of a read buffer.
        if message.qos != .atMostOnce || message.retain || configuration.queueQoS0Messages {
            message.compactForKeeping()
        }
        if message.retain {
            retainedStore.apply(message)
            persistence?.retainedChanged(message)  // [persist]
            message.retain = false  // forwarded with RETAIN cleared (MQTT-3.3.1-9)
        }
        var recorder = persistence?.routeRecorder(for: &message)  // [persist] records persistent targets
        // A `let` the closure below borrows; it would copy a `var` it captured for every session it enqueues to.
        let forwarded = consume message
        var sharedQoS0: PublishEncoding.Encoded?
        // A publisher's connection keeps the route it found last: its next message to the same topic skips the
        // route cache's hash of the topic. Moved out and back, not copied, so it costs no reference counting.
        var routeHint = publisher?.routeHint.take()
        subscriptionIndex.forEachMatch(topic: forwarded.topic, hint: &routeHint) { key, grantedQoS in
            guard let session = sessionsByKey[key] else { return }
            guard session.accessPolicy.mayReceive(forwarded.topic) else { return }  // [auth] read ACL per message
            let qos = min(forwarded.qos, grantedQoS)
            switch session.outbound.enqueue(forwarded, qos: qos, retain: false) {
            case .send(let delivery):
                if recorder?.handles(delivery, for: session) == true { return }  // [persist]
                guard let connection = session.connection else { return }
                if delivery.qos == .atMostOnce {
                    // Every QoS 0 copy is byte-identical: encode once, share the buffers.
                    let encoded = sharedQoS0 ?? PublishEncoding.encode(delivery, allocator: connection.allocator)
                    sharedQoS0 = encoded
                    connection.writeEncodedPublish(encoded)
                } else {
                    connection.writePublish(delivery)
                }
            case .queued:
                recorder?.queued(qos, for: session)  // [persist]
                holdBackPublisher(publisher, for: session, qos: qos)  // [flow]
            case .discarded:
                return
            case .dropped:
                noteDropped(session)
                holdBackPublisher(publisher, for: session, qos: qos)  // [flow]
            case .droppedSlowConsumer:
                noteDroppedSlowConsumer(session)  // [flow]
            }
        }
        publisher?.routeHint = routeHint
        recorder?.finish()  // [persist]
    }

    /// Adds or replaces a subscription (re-subscribing replaces the QoS, MQTT-3.8.4-3).
    func subscribe(_ session: BrokerSession, to filter: String, qos: QoS) {
        session.subscriptions[UTF8Key(filter)] = qos
        subscriptionIndex.subscribe(session.key, to: filter, qos: qos)
        persistence?.subscribed(session, to: filter, qos: qos)  // [persist]
    }

    /// Sends the retained messages matching a new or renewed subscription, with RETAIN set (MQTT-3.3.1-6).
    func deliverRetained(matching filter: String, grantedQoS: QoS, to session: BrokerSession) {
        guard configuration.retainAvailable else { return }
        for message in retainedStore.messages(matching: filter) where session.accessPolicy.mayReceive(message.topic) {  // [auth]
            offer(message, qos: min(message.qos, grantedQoS), retain: true, to: session)
        }
    }

    /// Removes a subscription; unknown filters are ignored (UNSUBACK is sent anyway, MQTT-3.10.4-5).
    func unsubscribe(_ session: BrokerSession, from filter: String) {
        guard session.subscriptions.removeValue(forKey: UTF8Key(filter)) != nil else { return }
        subscriptionIndex.unsubscribe(session.key, from: filter)
        persistence?.unsubscribed(session, from: filter)  // [persist]
    }

    /// The list acknowledgements collect their actions in (``acknowledged(_:packetID:by:)``): kept between
    /// acknowledgements, so that each one allocates no list of its own (two per message in fan-in QoS 2).
    @exclusivity(unchecked) private var acknowledgementActions: [OutboundAction] = []

    /// A client acknowledged an outbound PUBLISH (PUBACK, PUBREC or PUBCOMP): records it for a persistent session,
    /// advances the session's window and writes what follows (PUBREL, or queued messages that now fit).
    func acknowledged(_ acknowledgement: OutboundAcknowledgement, packetID: UInt16, by session: BrokerSession) {
        // [persist] Recorded before the flow forgets the entry (a PUBREC before the PUBREL it causes).
        persistence?.outboundAcknowledged(acknowledgement, packetID: packetID, session: session)
        // Taken out, not borrowed: a write below may end in another acknowledgement's actions (a connection whose
        // output unblocks), which then find the list empty and make their own.
        var actions = acknowledgementActions
        acknowledgementActions = []
        session.outbound.acknowledged(acknowledgement, packetID: packetID, into: &actions)
        perform(actions, for: session)
        actions.removeAllKeepingStorage()
        acknowledgementActions = actions
    }

    /// Writes the outcome of an outbound-flow event to the session's connection.
    func perform(_ actions: [OutboundAction], for session: BrokerSession) {
        guard let connection = session.connection else { return }
        defer { noteProgress(of: session) }  // [flow] the session acknowledged something, persistent or not
        if let persistence, !session.cleanSession {  // [persist] QoS 2 steps wait for their records
            persistence.perform(actions, for: session, via: connection)
            return
        }
        for action in actions {
            switch action {
            case .publish(let delivery):
                connection.writePublish(delivery)
            case .pubrel(let packetID):
                connection.writeAcknowledgement(MQTTAcknowledgement(.pubrel, packetID: packetID))
            }
        }
    }

    private func offer(_ message: BrokerMessage, qos: QoS, retain: Bool, to session: BrokerSession) {
        var message = message
        var recorder = persistence?.retainedCopyRecorder(for: &message, qos: qos, session: session)  // [persist]
        switch session.outbound.enqueue(message, qos: qos, retain: retain) {
        case .send(let delivery):
            if recorder?.handles(delivery, for: session) == true { break }  // [persist]
            session.connection?.writePublish(delivery)
        case .queued:
            recorder?.queued(qos, for: session)  // [persist]
        case .discarded:
            break
        case .dropped:
            noteDropped(session)
        case .droppedSlowConsumer:
            noteDroppedSlowConsumer(session)  // [flow]
        }
        recorder?.finish()  // [persist]
    }

    private func noteDropped(_ session: BrokerSession) {
        statistics.publishDropped += 1
        statistics.publishDroppedQueueFull += 1  // [flow]
        // [flow] logged at the 1st, 2nd, 4th, 8th ... drop of a session: a flood must not turn into a log flood.
        let dropped = session.outbound.droppedCount
        guard dropped & (dropped - 1) == 0 else { return }
        logger.warning(
            "session queue full, message dropped",
            metadata: ["client": "\(session.clientID)", "dropped": "\(dropped)"]
        )
    }

    // MARK: Flushing

    /// Whether a flush of the dirty connections is already scheduled for the end of this loop tick.
    @exclusivity(unchecked) private var flushScheduled = false
    /// The end-of-tick flush is made by the loop's iteration-end handler, not a task queued for it
    /// (``flushAtIterationEnd(of:)``).
    @exclusivity(unchecked) private var flushesAtIterationEnd = false
    /// When the read batch of a socket on this loop began: set by its first `channelRead`, cleared when the batch
    /// completes or the socket closes or fails (both of which flush too). Nil outside a batch.
    @exclusivity(unchecked) private(set) var pipelineReadStartedAt: NIODeadline?

    /// Whether a socket on this loop is between `channelRead` and `channelReadComplete`: its read batch ends with a
    /// flush, so writes made meanwhile need no end-of-tick task.
    var isInPipelineRead: Bool { pipelineReadStartedAt != nil }

    /// A socket's read batch begins (its `channelRead`).
    func pipelineReadBegins() {
        if pipelineReadStartedAt == nil { pipelineReadStartedAt = eventLoop.now }
    }

    /// The socket's read batch completed, or the socket closed or failed.
    func pipelineReadEnds() {
        pipelineReadStartedAt = nil
    }

    /// Runs `decode` (input decoded outside a socket's read, such as a resumed publisher's buffered bytes) as one
    /// read batch: one clock read for all of it instead of one per routed message, and writes flushed together at
    /// its end instead of by an end-of-tick task. Inside a read batch already, it simply joins that batch.
    func decodeAsReadBatch(_ decode: () -> Void) {
        guard !isInPipelineRead else { return decode() }
        pipelineReadBegins()
        decode()
        pipelineReadEnds()
        flushDirty()
    }

    /// The time for bookkeeping that needs no finer grain than a read batch (keepalive, back-pressure stalls):
    /// inside a read batch the time it began, otherwise the clock. One clock read per batch instead of one per
    /// acknowledgement or routed message.
    var now: NIODeadline { pipelineReadStartedAt ?? eventLoop.now }

    /// Remembers that `connection` has unflushed writes and makes sure they are flushed: when the read batch of a
    /// socket on this loop is complete (``BrokerConnectionHandler/channelReadComplete(context:)``), otherwise (timers,
    /// relayed sockets) by a task at the end of the current event-loop tick (NIO runs tasks after the tick's I/O).
    /// Everything one read batch wrote to a connection leaves in one flush, i.e. one `writev`.
    func markDirty(_ connection: BrokerConnectionHandler) {
        guard !connection.isDirty else { return }
        connection.isDirty = true
        dirtyConnections.append(connection)
        guard !isInPipelineRead else { return }
        scheduleEndOfTickFlush()
    }

    // MARK: Output buffers

    /// Coalescing buffers whose bytes the kernel has taken, for the next connection that writes: without them a
    /// broker at a low rate allocates and frees a buffer for every flush. A few, and none larger than
    /// ``maxSpareOutputBufferCapacity``, so they cost the core at most 256 KB.
    @exclusivity(unchecked) private var spareOutputBuffers: [ByteBuffer] = []
    static let maxSpareOutputBuffers = 8
    static let maxSpareOutputBufferCapacity = 32 * 1024

    /// Where the spare buffers' bytes are (for tests: the pool must keep its storage over real socket writes).
    var spareOutputStorageAddresses: [UInt] {
        spareOutputBuffers.map { $0.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) } }
    }

    /// A written buffer to coalesce output into, if one is spare.
    func takeOutputBuffer() -> ByteBuffer? {
        spareOutputBuffers.popLast()
    }

    /// `buffer` was written in full. Should anything still hold it, `clear()` gives the pool new storage instead,
    /// so a pooled buffer never shares bytes with anyone.
    ///
    /// The buffer is taken, not borrowed: a caller that hands over its last reference (`consume`) lets `clear()`
    /// keep the storage. A borrowed buffer would always look shared (the caller's copy and this one), and the pool
    /// would allocate a new buffer for every flush, which is what it exists to avoid.
    func recycleOutputBuffer(_ buffer: consuming ByteBuffer) {
        guard spareOutputBuffers.count < Self.maxSpareOutputBuffers, buffer.capacity <= Self.maxSpareOutputBufferCapacity
        else { return }
        buffer.clear()
        spareOutputBuffers.append(buffer)
    }

    /// Flushes every connection written to since the last call. `deferringAcknowledgements` (at the end of a read
    /// batch) leaves connections that hold nothing but acknowledgements of their own publishes for the end of the
    /// loop tick: the deliveries of every socket ready in this tick leave before any publisher's PUBACK.
    func flushDirty(deferringAcknowledgements: Bool = false) {
        guard !dirtyConnections.isEmpty else { return }
        // Two arrays take turns, so a flush allocates nothing; a flush nested in another (a write completing
        // inside the outer flush) finds no spare and starts an empty list.
        var pending = spareDirtyConnections
        spareDirtyConnections = []
        swap(&pending, &dirtyConnections)
        var deferred = false
        let now = self.now  // one clock read per flush of the dirty list, not one per connection
        for connection in pending {
            if deferringAcknowledgements && connection.holdsOnlyAcknowledgements {
                dirtyConnections.append(connection)
                deferred = true
            } else {
                connection.flushNow(at: now)
            }
        }
        pending.removeAllKeepingStorage()
        spareDirtyConnections = pending
        if deferred { scheduleEndOfTickFlush() }
    }

    private func scheduleEndOfTickFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        guard !flushesAtIterationEnd else { return }  // the loop calls flushIfScheduled() at the end of its iteration
        eventLoop.assumeIsolated().execute { [self] in
            flushIfScheduled()
        }
    }

    private func flushIfScheduled() {
        guard flushScheduled else { return }
        flushScheduled = false
        flushDirty()
    }

    /// Makes the end-of-tick flush on `loop`, the core's own loop, from the loop's iteration-end handler: every
    /// message whose publisher's acknowledgement waits for the end of the tick would otherwise cost a queued task
    /// (an allocation, two lock round trips and an extra `epoll_wait`). Call on `loop` before serving sockets. The
    /// handler holds the core until the loop stops.
    func flushAtIterationEnd(of loop: EpollEventLoop) {
        precondition(loop === eventLoop, "the core flushes at the end of its own loop's iterations")
        flushesAtIterationEnd = true
        loop.setIterationEndHandler { [self] in flushIfScheduled() }
    }

    // MARK: Sessions

    func makeSession(clientID: String, cleanSession: Bool) -> BrokerSession {
        nextSessionKey += 1
        let session = BrokerSession(
            key: SessionKey(rawValue: nextSessionKey),
            clientID: clientID,
            cleanSession: cleanSession,
            outbound: OutboundFlow(
                maxInflight: configuration.maxInflightMessages,
                maxQueued: configuration.maxQueuedMessages,
                maxQueuedBytes: configuration.maxQueuedBytes,  // [flow]
                queueQoS0WhileOffline: configuration.queueQoS0Messages
            )
        )
        sessionsByClientID[UTF8Key(clientID)] = session
        sessionsByKey[session.key] = session
        return session
    }

    private func removeSession(_ session: BrokerSession) {
        if !session.cleanSession { persistence?.sessionRemoved(session) }  // [persist]
        for filter in session.subscriptions.keys {
            subscriptionIndex.unsubscribe(session.key, from: filter.base)
        }
        session.subscriptions.removeAll()
        sessionsByKey[session.key] = nil
        if sessionsByClientID[UTF8Key(session.clientID)] === session {
            sessionsByClientID[UTF8Key(session.clientID)] = nil
        }
    }

    /// A unique identifier for a client that connected with an empty one (MQTT-3.1.3-6).
    private func assignClientID() -> String {
        repeat {
            nextAssignedID += 1
            let random = UInt32.random(in: 0...UInt32.max)
            let candidate = "auto-\(String(random, radix: 16))-\(nextAssignedID)"
            if sessionsByClientID[UTF8Key(candidate)] == nil { return candidate }
        } while true
    }

    /// The authentication step of CONNECT: nil to accept, or the CONNACK code to refuse with.
    private func authenticate(_ packet: ConnectPacket, clientID: String) -> ConnectReturnCode? {
        guard let username = packet.username else {
            return configuration.allowAnonymous ? nil : .notAuthorized
        }
        guard let authenticator = configuration.authenticator else { return nil }
        let accepted = authenticator.authenticate(username: username, password: packet.password, clientIdentifier: clientID)
        return accepted ? nil : .badUsernameOrPassword
    }

    // MARK: Life cycle

    /// Starts the periodic `$SYS` publication, if configured.
    func startSysPublishing() {
        eventLoop.assertInEventLoop()
        guard let interval = configuration.sysInterval, interval.nanoseconds > 0, sysTask == nil else { return }
        publishSysTopics()
        scheduleSysPublishing(in: interval)
    }

    private func scheduleSysPublishing(in interval: TimeAmount) {
        // `self` is captured strongly, as in every timer of the core (see ``scheduleDeadlineTimer()``).
        sysTask = eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            guard !self.isShuttingDown else { return }
            self.publishSysTopics()
            self.scheduleSysPublishing(in: interval)
        }
    }

    /// Publishes the current statistics as retained `$SYS/broker/...` messages.
    func publishSysTopics() {
        eventLoop.assertInEventLoop()
        guard !isShuttingDown else { return }
        for (topic, value) in SysTopics.values(of: self, now: eventLoop.now) {
            route(BrokerMessage(topic: topic, payload: ByteBuffer(string: value), qos: .atMostOnce, retain: true))
        }
        flushDirty()
    }

    /// Closes every connection without publishing wills and stops the `$SYS` timer. Returns when all are closed.
    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        isShuttingDown = true
        sysTask?.cancel()
        sysTask = nil
        stallCheckTask?.cancel()  // [flow]
        stallCheckTask = nil
        cancelDeadlineTimer()
        let open = Array(connections.values)
        let closed = open.map { $0.closeFuture }
        for connection in open {
            connection.close(.serverShutdown)
        }
        return EventLoopFuture.andAllComplete(closed, on: eventLoop)
    }
}
