import MQTTCore
import NIOCore

// The calls the broker core and the connection handler make into persistence. Each one is a no-op for clean
// sessions, so with persistence on, clean sessions and QoS 0 cost a check and nothing else (except retained
// messages, which are always recorded).
extension PersistenceStore {
    // MARK: Sessions and subscriptions

    /// A persistent session was created by CONNECT (clean session = false, no session present).
    func sessionCreated(_ session: BrokerSession) {
        persistentSessionCount += 1
        append(.sessionCreated(clientID: session.clientID))
        append(.sessionLifetime(clientID: session.clientID, protocolVersion: session.protocolVersion, expiryInterval: session.expiryInterval))
    }

    /// A client resumed its persistent session, or DISCONNECT changed its Session Expiry Interval: the session's
    /// protocol level and interval as they are now. Nothing waits for it (a crash before it is durable restores the
    /// previous lifetime).
    func sessionLifetimeChanged(_ session: BrokerSession) {
        guard !session.cleanSession else { return }
        append(.sessionLifetime(clientID: session.clientID, protocolVersion: session.protocolVersion, expiryInterval: session.expiryInterval))
    }

    /// A persistent session was discarded (a clean-session CONNECT took its client id).
    func sessionRemoved(_ session: BrokerSession) {
        persistentSessionCount -= 1
        append(.sessionRemoved(clientID: session.clientID))
    }

    /// SUBSCRIBE added or replaced a subscription. SUBACK waits for it (``whenDurable(pendingMessage:_:)``).
    func subscribed(_ session: BrokerSession, to filter: String, qos: QoS) {
        guard !session.cleanSession else { return }
        append(.subscribed(clientID: session.clientID, filter: filter, qos: qos))
    }

    /// SUBSCRIBE set a filter's MQTT 5 options, after ``subscribed(_:to:qos:)`` (which resets them to the
    /// defaults): recorded when they are not the defaults. SUBACK waits for it with the subscription.
    func subscriptionOptionsChanged(_ session: BrokerSession, filter: String, options: SubscriptionOptions) {
        guard !session.cleanSession, !options.isDefault else { return }
        append(.subscriptionOptions(clientID: session.clientID, filter: filter, options: options))
    }

    /// UNSUBSCRIBE removed a subscription.
    func unsubscribed(_ session: BrokerSession, from filter: String) {
        guard !session.cleanSession else { return }
        append(.unsubscribed(clientID: session.clientID, filter: filter))
    }

    /// A persistent session's will waits for its delay: recorded so that a restart neither loses nor repeats it.
    /// Nothing waits for it to be durable (a crash before then restores the session without the will).
    func delayedWillScheduled(_ session: BrokerSession, will: BrokerMessage, publishAt: NIODeadline) {
        guard !session.cleanSession else { return }
        append(.delayedWill(clientID: session.clientID, will: StoredWill(will, publishAt: publishAt, clock: clock)))
    }

    /// The delayed will was published, or cancelled by the client's return.
    func delayedWillCleared(_ session: BrokerSession) {
        guard !session.cleanSession else { return }
        append(.delayedWillCleared(clientID: session.clientID))
    }

    /// The retained store changed. `$SYS` topics are rebuilt by the broker and never stored.
    func retainedChanged(_ message: BrokerMessage) {
        guard !MQTTTopic.isSystemTopic(message.topic) else { return }
        append(
            .retained(
                topic: message.topic, qos: message.qos, payload: message.payload,
                properties: message.properties.withoutSubscriptionIdentifiers,
                expiresAt: message.expiresAt.map { clock.wallTime(of: $0) }))
    }

    // MARK: Inbound

    /// An inbound PUBLISH (any QoS; `qos2PacketID` set for a new QoS 2 one): routes it and runs `acknowledge`,
    /// at once when nothing needs to be durable first, otherwise once its record is synced.
    ///
    /// A QoS 1/2 message is recorded when a persistent session exists or it is retained; a QoS 2 packet id of a
    /// persistent publisher is recorded with it, in the same record. While anything waits, later publishes wait
    /// behind it, so routing and acknowledgements keep the order the publishes arrived in.
    func accept(
        _ message: BrokerMessage, from session: BrokerSession, qos2PacketID: UInt16?, routable: Bool, core: BrokerCore,
        publisher: BrokerConnectionHandler, acknowledge: @escaping () -> Void
    ) {
        let origin = session.cleanSession ? nil : qos2PacketID.map { StoredMessage.Origin(clientID: session.clientID, packetID: $0) }
        let logMessage = routable && message.qos != .atMostOnce && (message.retain || persistentSessionCount > 0)
        if !logMessage, origin == nil, !hasWaiters {
            acknowledge()  // ahead of the publisher's own copy, as in ``NoPersistence``
            if routable { core.route(message, from: publisher) }
            return
        }
        var message = message
        var pending: StoredMessage?
        if logMessage {
            message.storeID = makeStoreID()
            let stored = StoredMessage(message, mustRoute: true, origin: origin, clock: clock)
            append(.message(stored))
            pending = stored
        } else if let origin {
            append(.inboundReceived(clientID: origin.clientID, packetID: origin.packetID))
        }
        whenDurable(pendingMessage: pending) { [message] in
            acknowledge()  // ahead of the publisher's own copy, as in ``NoPersistence``
            if routable { core.route(message, from: publisher) }
        }
    }

    /// PUBREL released an inbound QoS 2 id: the release is durable before PUBCOMP, so a publisher that re-uses the
    /// id after a crash is never mistaken for a duplicate.
    func inboundReleased(_ session: BrokerSession, packetID: UInt16) {
        guard !session.cleanSession else { return }
        append(.inboundReleased(clientID: session.clientID, packetID: packetID))
    }

    // MARK: Outbound

    /// A recorder for one routed message: assigns it an id when it has none yet.
    func routeRecorder(for message: inout BrokerMessage) -> RouteRecorder? {
        let logged = message.storeID != 0
        guard logged || (message.qos != .atMostOnce && persistentSessionCount > 0) else { return nil }
        if !logged { message.storeID = makeStoreID() }
        return RouteRecorder(store: self, message: message, alreadyLogged: logged, retainFlag: false)
    }

    /// A logged message matched no subscription: mark it routed so recovery does not route it again.
    func routedNowhere(_ message: BrokerMessage) {
        guard message.storeID != 0 else { return }
        append(.routed(storeID: message.storeID, targets: []))
    }

    /// A recorder for a retained message sent to a new subscription of a persistent session: a copy with its own id.
    func retainedCopyRecorder(for message: inout BrokerMessage, qos: QoS, session: BrokerSession) -> RouteRecorder? {
        guard qos != .atMostOnce, !session.cleanSession else { return nil }
        message.storeID = makeStoreID()
        return RouteRecorder(store: self, message: message, alreadyLogged: false, retainFlag: true)
    }

    /// Writes outbound-flow actions for a persistent session: a QoS 2 PUBLISH leaving the queue is recorded with its
    /// packet id and written once that is durable; PUBREL is written once the PUBREC that caused it is durable.
    /// QoS 1 goes out at once (a re-send after a crash is allowed at QoS 1).
    func perform(_ actions: [OutboundAction], for session: BrokerSession, via connection: BrokerConnectionHandler) {
        for action in actions {
            switch action {
            case .publish(let delivery):
                guard delivery.qos == .exactlyOnce else {
                    afterPending {  // in order behind a QoS 2 PUBLISH that waits, otherwise at once
                        guard session.connection === connection else { return }
                        connection.writePublish(delivery)
                    }
                    continue
                }
                if !delivery.dup, let packetID = delivery.packetID, delivery.message.storeID != 0 {
                    append(.outboundSent(clientID: session.clientID, packetID: packetID, storeID: delivery.message.storeID))
                }
                whenDurable {
                    guard session.connection === connection else { return }
                    connection.writePublish(delivery)
                }
            case .pubrel(let packetID):
                whenDurable {
                    guard session.connection === connection else { return }
                    connection.writeAcknowledgement(MQTTAcknowledgement(.pubrel, packetID: packetID))
                }
            }
        }
    }

    /// Records an acknowledgement from the client before the flow forgets the entry: PUBACK and PUBCOMP lazily
    /// (nothing waits for them), PUBREC before the PUBREL it causes (see ``perform(_:for:via:)``).
    func outboundAcknowledged(_ type: OutboundAcknowledgement, packetID: UInt16, session: BrokerSession) {
        guard !session.cleanSession, let entry = session.outbound.inflight[packetID] else { return }
        let clientID = session.clientID
        switch (type, entry.state) {
        case (.puback, .awaitingPubAck):
            guard entry.delivery.message.storeID != 0 else { return }
            append(.outboundAcked(clientID: clientID, storeID: entry.delivery.message.storeID))
        case (.pubrec, .awaitingPubRec):
            append(.outboundReleased(clientID: clientID, packetID: packetID))
        case (.pubcomp, .awaitingPubComp):
            append(.outboundCompleted(clientID: clientID, packetID: packetID))
        default:
            return
        }
    }
}

/// Collects what routing one message did to persistent sessions, then records it in one go: the message (once, if
/// not recorded yet), one ``PersistentRecord/routed(storeID:targets:)`` naming every persistent session that queued
/// it, and the packet ids of QoS 2 copies sent at once, whose PUBLISH waits for those records.
struct RouteRecorder {
    let store: PersistenceStore
    let message: BrokerMessage
    let alreadyLogged: Bool
    /// RETAIN flag of queued copies (set for retained messages answering a new subscription).
    let retainFlag: Bool
    private var targets: [RoutedTarget] = []
    private var deferred: [(session: BrokerSession, connection: BrokerConnectionHandler, delivery: OutboundDelivery)] = []

    init(store: PersistenceStore, message: BrokerMessage, alreadyLogged: Bool, retainFlag: Bool) {
        self.store = store
        self.message = message
        self.alreadyLogged = alreadyLogged
        self.retainFlag = retainFlag
    }

    /// The flow wants `delivery` written now. Returns true when the recorder takes over the write (QoS 2 to a
    /// persistent session: written once its records are durable; QoS 1 while other writes wait: behind them).
    mutating func handles(_ delivery: OutboundDelivery, for session: BrokerSession) -> Bool {
        guard !session.cleanSession, delivery.qos != .atMostOnce else { return false }
        targets.append(RoutedTarget(clientID: session.clientID, qos: delivery.qos, retain: delivery.retain))
        guard delivery.qos == .exactlyOnce || store.hasWaiters else { return false }
        if let connection = session.connection {
            deferred.append((session, connection, delivery))
        }
        return true
    }

    /// The flow queued the message for `session` at `qos`.
    mutating func queued(_ qos: QoS, for session: BrokerSession) {
        guard !session.cleanSession, qos != .atMostOnce else { return }
        targets.append(RoutedTarget(clientID: session.clientID, qos: qos, retain: retainFlag))
    }

    /// Appends the records and schedules the deferred writes.
    func finish() {
        guard !targets.isEmpty || alreadyLogged else { return }
        if !alreadyLogged {
            store.append(.message(StoredMessage(message, mustRoute: false, origin: nil, clock: store.clock)))
        }
        store.append(.routed(storeID: message.storeID, targets: targets))
        for (session, connection, delivery) in deferred {
            let write = {
                guard session.connection === connection else { return }
                connection.writePublish(delivery)
            }
            if delivery.qos == .exactlyOnce, let packetID = delivery.packetID {
                store.append(.outboundSent(clientID: session.clientID, packetID: packetID, storeID: message.storeID))
                store.whenDurable(write)
            } else {
                store.afterPending(write)
            }
        }
    }
}
