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
/// the dynamic ones are a measurable share of the message path's CPU (docs/benchmarks.md).
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
    /// The running bridges (`Bridge/`), for `$SYS` and shutdown.
    @exclusivity(unchecked) var bridges: [BridgeConnection] = []
    /// Every session, connected or not.
    let sessions: SessionRegistry
    /// Who subscribes to what (ordinary and shared filters, each session's own list).
    let subscriptions = SubscriptionTable()
    let retainedStore = RetainedStore()
    /// Every open connection, connected or still waiting for CONNECT, for shutdown.
    @exclusivity(unchecked) private(set) var connections: [ObjectIdentifier: BrokerConnectionHandler] = [:]
    /// When the connections' output leaves (per read batch, or at the end of the tick).
    let flusher: OutputFlusher
    /// Written coalescing buffers, for the next connection that writes.
    @exclusivity(unchecked) var outputBuffers = OutputBufferPool()
    @exclusivity(unchecked) private(set) var isShuttingDown = false
    /// Publishes `$SYS/broker/...` every `sys_interval`.
    let sysPublisher: SysPublisher
    /// Connection deadlines and the one timer armed for the earliest.
    let timers: ConnectionTimers
    /// Publisher back-pressure (`backpressure_stall_ms`).
    let backpressure: BackpressureController
    /// What must survive a restart is recorded here: ``NoPersistence`` when `persistence` is off.
    @exclusivity(unchecked) private(set) var storage: any BrokerPersistence = NoPersistence()
    /// The durable store, when `persistence` is on (its statistics, compaction and shutdown).
    @exclusivity(unchecked) private(set) var persistence: PersistenceStore?
    /// Parked idle connections; nil when parking is off or sockets are NIO's.
    @exclusivity(unchecked) var parking: ParkingRegistry?

    /// The parked connections, by descriptor (`$SYS`, tests).
    var parkedConnections: [CInt: BrokerConnectionHandler] { parking?.connections ?? [:] }

    /// How many times connections parked and came back (`$SYS`, tests).
    var parkCounts: ParkCounts { parking?.counts ?? ParkCounts() }

    init(configuration: BrokerConfiguration, logger: Logger, eventLoop: any EventLoop) {
        self.configuration = configuration
        self.logger = logger
        self.logsEveryPacket = logger.logLevel <= .trace
        self.eventLoop = eventLoop
        self.startedAt = eventLoop.now
        self.sessions = SessionRegistry(configuration: configuration)
        self.flusher = OutputFlusher(eventLoop: eventLoop)
        self.timers = ConnectionTimers(eventLoop: eventLoop)
        self.backpressure = BackpressureController(stallTimeout: configuration.backpressureStallTimeout)
        self.sysPublisher = SysPublisher(interval: configuration.sysInterval)
    }

    /// The number of sessions with a connection attached.
    @exclusivity(unchecked) private(set) var connectedClientCount = 0

    /// The number of sessions, connected or not.
    var sessionCount: Int { sessions.count }

    /// The connections not read because they fill a congested session (`$SYS`, tests).
    var backpressuredConnectionCount: Int { backpressure.pausedConnectionCount }

    /// How many times a connection was paused since the start (`$SYS`, tests).
    var backpressurePauseCount: UInt64 { backpressure.pauseCount }

    /// The number of (client, filter) subscriptions.
    var subscriptionCount: Int { subscriptions.count }

    /// How many distinct event loops the open connections' sockets are served on (diagnostics and tests).
    var socketEventLoopsInUse: Int {
        Set(connections.values.map { ObjectIdentifier($0.socketEventLoop) }).count
    }

    /// The session stored for `clientID`, if any.
    func session(forClientID clientID: String) -> BrokerSession? {
        sessions.session(forClientID: clientID)
    }

    /// Persistence was recovered into this core: from now on what must survive a restart is recorded in `store`.
    func persistenceStarted(_ store: PersistenceStore) {
        persistence = store
        storage = store
    }

    // MARK: Connections

    /// A socket was accepted. Returns false (and keeps nothing) when `max_connections` sockets are already open.
    func connectionOpened(_ connection: BrokerConnectionHandler) -> Bool {
        eventLoop.assertInEventLoop()
        // max_connections (Auth/ConnectionLimit).
        guard ConnectionLimit(maxConnections: configuration.maxConnections).admits(openConnections: connections.count) else { return false }
        connections[ObjectIdentifier(connection)] = connection
        return true
    }

    /// CONNECT was accepted: `session` is now `connection`'s.
    func attach(_ session: BrokerSession, to connection: BrokerConnectionHandler) {
        session.connection = connection
        connection.session = session
        connectedClientCount += 1
        statistics.maximumConnected = max(statistics.maximumConnected, connectedClientCount)
    }

    /// After CONNACK: re-send what the session still owes the client, then the queue (MQTT-4.4.0-1).
    func resumeDelivery(for session: BrokerSession) {
        statistics.publishDropped += UInt64(session.outbound.dropExpired(now: now))
        perform(session.outbound.resume(), for: session)
    }

    /// A connection ended for `reason`: detaches it from its session, discards a clean session and publishes the
    /// will when the reason calls for it. Called exactly once per connection, by the connection itself.
    func connectionEnded(_ connection: BrokerConnectionHandler, reason: CloseReason) {
        eventLoop.assertInEventLoop()
        connections[ObjectIdentifier(connection)] = nil
        backpressure.connectionClosed(connection)
        guard let session = connection.session else { return }
        connection.session = nil
        if session.connection === connection {
            session.connection = nil
            connectedClientCount -= 1
            session.outbound.suspend()
            backpressure.sessionWentOffline(session, core: self)  // offline sessions hold no publisher back
            if session.cleanSession {
                removeSession(session)
            } else if !isShuttingDown {
                scheduleExpiry(of: session)
            }
        }
        if reason.publishesWill, !isShuttingDown, let will = connection.will {
            logger.debug("publishing will", metadata: ["client": "\(session.clientID)", "topic": "\(will.topic)"])
            publishWill(will, of: session)
        }
    }

    // MARK: Messages

    /// Routes an application message: updates the retained store and delivers a copy to every matching session,
    /// once per session at `min(message QoS, highest granted QoS)` (MQTT-3.3.5-1), with RETAIN cleared
    /// (MQTT-3.3.1-9). An empty retained message deletes the stored one and is still forwarded.
    /// `publisher` is the connection the message came from, if any: it is paused when the message leaves an online
    /// session's queue above its high watermark (publisher back-pressure, see ``PublisherBackpressure``).
    /// `fromSession` names the publishing session when there is no connection: a will, for No Local.
    func route(
        _ message: consuming BrokerMessage, from publisher: BrokerConnectionHandler? = nil,
        fromSession: BrokerSession? = nil
    ) {
        // Taken, not borrowed, and changed in place: a copy of the message here costs a retain and a release of its
        // topic and payload per publish.
        // QoS 1/2 and retained messages may be kept (in flight, queued, retained): not as slices of a read buffer.
        if message.qos != .atMostOnce || message.retain || configuration.queueQoS0Messages {
            message.compactForKeeping()
        }
        let publishedRetained = message.retain
        if message.retain {
            retainedStore.apply(message)
            storage.retainedChanged(message)
            message.retain = false  // forwarded with RETAIN cleared (MQTT-3.3.1-9), unless Retain As Published
        }
        var recorder = storage.routeRecorder(for: &message)  // records what persistent sessions must not lose
        // A `let` the closure below borrows; it would copy a `var` it captured for every session it enqueues to.
        let forwarded = consume message
        var sharedQoS0: PublishEncoding.Encoded?
        var sharedQoS0V5: PublishEncoding.Encoded?
        // A publisher's connection keeps the route it found last: its next message to the same topic skips the
        // route cache's hash of the topic. Moved out and back, not copied, so it costs no reference counting.
        var routeHint = publisher?.routeHint.take()
        // What MQTT 5 deliveries need to know of the publication: made once per route, not per subscriber.
        let version5Context = Version5Route(
            publishedRetained: publishedRetained, publisher: publisher, publishingSession: publisher?.session ?? fromSession)
        subscriptions.index.forEachMatch(topic: forwarded.topic, hint: &routeHint) { key, grantedQoS in
            guard let session = sessions.session(forKey: key) else { return }
            guard session.accessPolicy.mayReceive(forwarded.topic) else { return }  // read ACL per message
            if session.protocolVersion == .v5 || !session.subscriptionOptions.isEmpty {  // +Version5; 3.1.1 bridges
                deliverVersion5(
                    forwarded, grantedQoS: grantedQoS, to: session, version5Context, recorder: &recorder,
                    sharedQoS0: &sharedQoS0V5)
                return
            }
            let qos = min(forwarded.qos, grantedQoS)
            switch session.outbound.enqueue(forwarded, qos: qos, retain: false) {
            case .send(let delivery):
                if recorder?.handles(delivery, for: session) == true { return }
                guard let connection = session.connection else { return }
                if delivery.qos == .atMostOnce {
                    // Every QoS 0 copy is byte-identical: encode once, share the buffers.
                    let encoded = sharedQoS0 ?? PublishEncoding.encode(delivery, allocator: allocator)
                    sharedQoS0 = encoded
                    connection.writeEncodedPublish(encoded)
                } else {
                    connection.writePublish(delivery)
                }
            case .queued:
                recorder?.queued(qos, for: session)
                backpressure.holdBack(publisher, for: session, qos: qos, core: self)
            case .discarded:
                return
            case .dropped:
                statistics.noteDropped(session, logger: logger)
                backpressure.holdBack(publisher, for: session, qos: qos, core: self)
            case .droppedSlowConsumer:
                statistics.noteDroppedSlowConsumer(session, logger: logger)
            }
        }
        publisher?.routeHint = routeHint
        if !subscriptions.shared.isEmpty {
            deliverShared(forwarded, version5Context, recorder: &recorder)
        }
        recorder?.finish()
    }

    /// Adds or replaces a subscription (re-subscribing replaces the QoS, MQTT-3.8.4-3).
    func subscribe(_ session: BrokerSession, to filter: String, qos: QoS) {
        subscriptions.add(session, filter: filter, qos: qos)
        storage.subscribed(session, to: filter, qos: qos)
    }

    /// Sends the retained messages matching a new or renewed subscription, with RETAIN set (MQTT-3.3.1-6), less
    /// the expired ones; an MQTT 5 subscription's identifier goes with them.
    func deliverRetained(matching filter: String, grantedQoS: QoS, to session: BrokerSession, identifier: Int? = nil) {
        guard configuration.retainAvailable else { return }
        let now = self.now
        for message in retainedStore.messages(matching: filter) where session.accessPolicy.mayReceive(message.topic) {
            guard !message.hasExpired(at: now) else { continue }
            var copy = message
            if let identifier { copy.properties.entries.append(.subscriptionIdentifier(identifier)) }
            let qos = min(message.qos, grantedQoS)
            guard session.maximumPacketSize == nil || fits(copy, qos: qos, in: session) else { continue }
            offer(copy, qos: qos, retain: true, to: session)
        }
    }

    /// Removes a subscription; unknown filters are ignored (UNSUBACK is sent anyway, MQTT-3.10.4-5). Returns
    /// whether it existed (MQTT 5's UNSUBACK says 0x11 when it did not).
    @discardableResult
    func unsubscribe(_ session: BrokerSession, from filter: String) -> Bool {
        guard subscriptions.remove(session, filter: filter) else { return false }
        storage.unsubscribed(session, from: filter)
        return true
    }

    /// Whether any session subscribes to a filter matching `topic` (MQTT 5's PUBACK says 0x10 when none does).
    /// `publisher`'s route hint spares the route cache's hash, as in ``route(_:from:fromSession:)`` right after.
    func hasSubscriber(matching topic: String, from publisher: BrokerConnectionHandler? = nil) -> Bool {
        var hint = publisher?.routeHint.take()
        defer { publisher?.routeHint = hint }
        return subscriptions.hasSubscriber(matching: topic, hint: &hint)
    }

    /// The list acknowledgements collect their actions in (``acknowledged(_:packetID:by:)``): kept between
    /// acknowledgements, so that each one allocates no list of its own (a QoS 2 delivery takes two).
    @exclusivity(unchecked) private var acknowledgementActions: [OutboundAction] = []

    /// A client acknowledged an outbound PUBLISH (PUBACK, PUBREC or PUBCOMP): records it for a persistent session,
    /// advances the session's window and writes what follows (PUBREL, or queued messages that now fit).
    /// Returns the flow's verdict; the caller closes the connection when the acknowledgement does not fit its flow.
    @discardableResult
    func acknowledged(
        _ acknowledgement: OutboundAcknowledgement, packetID: UInt16, by session: BrokerSession
    ) -> OutboundFlow.AcknowledgementOutcome {
        // Recorded before the flow forgets the entry (a PUBREC before the PUBREL it causes).
        storage.outboundAcknowledged(acknowledgement, packetID: packetID, session: session)
        // Taken out, not borrowed: a write below may end in another acknowledgement's actions (a connection whose
        // output unblocks), which then find the list empty and make their own.
        if session.protocolVersion == .v5 {  // what expired while waiting for the window is not sent
            statistics.publishDropped += UInt64(session.outbound.dropExpired(now: now))
        }
        var actions = acknowledgementActions
        acknowledgementActions = []
        let outcome = session.outbound.acknowledged(acknowledgement, packetID: packetID, into: &actions)
        if outcome != .wrongFlow { perform(actions, for: session) }
        actions.removeAllKeepingStorage()
        acknowledgementActions = actions
        return outcome
    }

    /// Writes the outcome of an outbound-flow event to the session's connection.
    func perform(_ actions: [OutboundAction], for session: BrokerSession) {
        guard let connection = session.connection else { return }
        defer { backpressure.noteProgress(of: session, core: self) }  // it acknowledged something, persistent or not
        storage.performOutbound(actions, for: session, via: connection)
    }

    func offer(_ message: BrokerMessage, qos: QoS, retain: Bool, to session: BrokerSession) {
        var message = message
        var recorder = storage.retainedCopyRecorder(for: &message, qos: qos, session: session)
        switch session.outbound.enqueue(message, qos: qos, retain: retain) {
        case .send(let delivery):
            if recorder?.handles(delivery, for: session) == true { break }
            session.connection?.writePublish(delivery)
        case .queued:
            recorder?.queued(qos, for: session)
        case .discarded:
            break
        case .dropped:
            statistics.noteDropped(session, logger: logger)
        case .droppedSlowConsumer:
            statistics.noteDroppedSlowConsumer(session, logger: logger)
        }
        recorder?.finish()
    }

    // MARK: Flushing

    /// The time of the read batch in progress, or the clock (``OutputFlusher/now``).
    var now: NIODeadline { flusher.now }

    /// Whether a socket on this loop is inside a read batch, which ends with a flush.
    var isInPipelineRead: Bool { flusher.isInReadBatch }

    /// Flushes every connection written to since the last call (``OutputFlusher/flushDirty(deferringAcknowledgements:)``).
    func flushDirty(deferringAcknowledgements: Bool = false) {
        flusher.flushDirty(deferringAcknowledgements: deferringAcknowledgements)
    }

    /// The pool's limit (tests).
    static var maxSpareOutputBuffers: Int { OutputBufferPool.maxBuffers }

    /// Where the spare buffers' bytes are (tests).
    var spareOutputStorageAddresses: [UInt] { outputBuffers.storageAddresses }

    /// A written buffer to coalesce output into, if one is spare.
    func takeOutputBuffer() -> ByteBuffer? {
        outputBuffers.take()
    }

    /// `buffer` was written in full: kept for the next connection that writes (``OutputBufferPool/recycle(_:)``).
    func recycleOutputBuffer(_ buffer: consuming ByteBuffer) {
        outputBuffers.recycle(buffer)
    }

    // MARK: Sessions

    /// A new session for `clientID` (restored ones included).
    func makeSession(clientID: String, cleanSession: Bool) -> BrokerSession {
        sessions.makeSession(clientID: clientID, cleanSession: cleanSession)
    }

    /// Ends `session`: its subscriptions leave the index, and a persistent one is forgotten by persistence.
    func removeSession(_ session: BrokerSession) {
        sessionResumed(session)  // its expiry and delayed will end with it, unsent
        if !session.cleanSession { storage.sessionRemoved(session) }
        subscriptions.removeAll(of: session)
        sessions.remove(session)
    }

    // MARK: Life cycle

    /// Starts the periodic `$SYS` publication, if configured.
    func startSysPublishing() {
        sysPublisher.start(for: self)
    }

    /// Publishes the current statistics as retained `$SYS/broker/...` messages.
    func publishSysTopics() {
        sysPublisher.publish(for: self)
    }

    /// Closes every connection without publishing wills and stops the `$SYS` timer. Returns when all are closed.
    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.assertInEventLoop()
        isShuttingDown = true
        sysPublisher.stop()
        backpressure.stop()
        timers.stop()
        for session in sessions.byKey.values {
            // The timers hold the core. The delayed will itself stays: the snapshot written at shutdown keeps it.
            session.expiryTask?.cancel()
            session.delayedWill?.task.cancel()
        }
        let open = Array(connections.values)
        let closed = open.map { $0.closeFuture }
        for connection in open {
            connection.close(.serverShutdown)
        }
        return EventLoopFuture.andAllComplete(closed, on: eventLoop)
    }
}
