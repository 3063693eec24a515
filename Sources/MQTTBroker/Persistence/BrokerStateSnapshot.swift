import MQTTCore
import NIOCore

/// The broker state that persistence keeps, in both directions: rebuilt into a core from a recovered
/// ``PersistentState`` at start, and written out of a core as a snapshot file when the log is compacted.
enum BrokerStateSnapshot {
    /// What ``restore(_:into:wall:)`` rebuilt.
    struct Restored: Sendable, Hashable {
        var sessions = 0
        /// Deliveries whose message was not stored.
        var skipped = 0
        /// Queued, retained or unrouted messages that expired while the broker was down (dropped).
        var expired = 0
    }

    /// Rebuilds sessions (with their MQTT 5 lifetime and subscription options), subscriptions, flows, inbound QoS 2
    /// ids and retained messages from `state`, then routes the messages that were accepted but not routed before
    /// the broker stopped. Runs before the core has its ``PersistenceStore``, so nothing is recorded twice; the
    /// snapshot written next captures the result.
    ///
    /// Message expiry is converted from wall-clock time (`wall`, now) to the core's clock: a queued, retained or
    /// unrouted message that expired meanwhile is dropped; a QoS 2 message already sent keeps its flow (it is
    /// re-sent with the shortest expiry). Every restored session is offline, so its expiry timer starts now: the
    /// time it was offline before the broker stopped is not counted.
    static func restore(_ state: PersistentState, into core: BrokerCore, wall: WallClockTime = .now()) -> Restored {
        let clock = PersistenceClock(uptime: core.now, wall: wall)
        var restored = Restored(sessions: state.sessions.count)
        for (topic, retained) in state.retained {
            if let expiresAt = retained.expiresAt, clock.hasExpired(expiresAt) {
                restored.expired += 1
                continue
            }
            core.retainedStore.apply(
                BrokerMessage(
                    topic: topic.base, payload: retained.payload, qos: retained.qos, retain: true,
                    properties: retained.properties, expiresAt: retained.expiresAt.map { clock.deadline(of: $0) }))
        }
        for (clientID, stored) in state.sessions.sorted(by: { $0.key < $1.key }) {
            let session = core.sessions.makeSession(clientID: clientID.base, cleanSession: false)
            restoreLifetime(of: session, from: stored, core: core)
            for (filter, qos) in stored.subscriptions {
                core.subscribe(session, to: filter.base, qos: qos)
            }
            if session.protocolVersion == .v5 {
                session.subscriptionOptions = stored.subscriptionOptions.filter { stored.subscriptions[$0.key] != nil }
            }
            for packetID in stored.inboundQoS2 {
                _ = session.inboundQoS2.publishReceived(packetID: packetID)
            }
            var inflight: [(packetID: UInt16, delivery: OutboundDelivery, state: OutboundFlow.InflightState)] = []
            var queued: [OutboundFlow.QueuedMessage] = []
            for delivery in stored.deliveries {
                var message: BrokerMessage
                if let stored = state.messages[delivery.storeID] {
                    if delivery.state == .queued, let expiresAt = stored.expiresAt, clock.hasExpired(expiresAt) {
                        restored.expired += 1
                        continue
                    }
                    message = stored.brokerMessage(clock)
                    message.retain = false
                } else if delivery.state == .awaitingPubComp {
                    // Only the packet id matters once PUBREC arrived.
                    message = BrokerMessage(topic: "", payload: ByteBuffer(), qos: delivery.qos, retain: false, storeID: delivery.storeID)
                } else {
                    restored.skipped += 1
                    continue
                }
                let identifiers = subscriptionIdentifiers(for: message, in: session)
                if let packetID = delivery.packetID, delivery.state != .queued {
                    if let identifier = identifiers.first { message.properties.entries.append(.subscriptionIdentifier(identifier)) }
                    inflight.append(
                        (packetID, OutboundDelivery(message: message, qos: delivery.qos, retain: delivery.retain, dup: false, packetID: packetID),
                         delivery.state == .awaitingPubComp ? .awaitingPubComp : .awaitingPubRec))
                } else if identifiers.isEmpty {
                    queued.append(OutboundFlow.QueuedMessage(message: message, qos: delivery.qos, retain: delivery.retain))
                } else {
                    // One copy per identifier, as routing makes them (BrokerCore.deliver).
                    for identifier in identifiers {
                        var copy = message
                        copy.properties.entries.append(.subscriptionIdentifier(identifier))
                        queued.append(OutboundFlow.QueuedMessage(message: copy, qos: delivery.qos, retain: delivery.retain))
                    }
                }
            }
            session.outbound.restore(inflight: inflight, queued: queued)
            if let will = stored.delayedWill {
                let (message, publishAt) = will.restored(clock)
                core.scheduleDelayedWill(message, of: session, at: publishAt)
            }
            core.scheduleExpiry(of: session)  // offline from now on: an MQTT 5 session ends after its interval
        }
        for storeID in state.pendingRoutes {
            guard let message = state.messages[storeID] else { continue }
            if let expiresAt = message.expiresAt, clock.hasExpired(expiresAt) {
                restored.expired += 1
                continue
            }
            core.route(message.brokerMessage(clock))
        }
        if restored.skipped > 0 {
            core.logger.warning("persistence: deliveries whose message was not stored were skipped", metadata: ["count": "\(restored.skipped)"])
        }
        return restored
    }

    /// The protocol level and Session Expiry Interval of a restored session; a session stored by format version 1
    /// is an MQTT 3.1.1 one, with the lifetime `persistent_client_expiration` gives those.
    private static func restoreLifetime(of session: BrokerSession, from stored: PersistentState.Session, core: BrokerCore) {
        if let lifetime = stored.lifetime {
            session.protocolVersion = lifetime.protocolVersion
            session.expiryInterval = lifetime.expiryInterval
        } else {
            session.protocolVersion = .v3_1_1
            session.expiryInterval = max(core.configuration.persistentClientExpiration ?? .max, 1)
        }
    }

    /// The Subscription Identifiers a delivery of `message` carries: those of the session's matching subscriptions
    /// (identifiers are not stored per delivery; they follow from the restored subscriptions), sorted.
    private static func subscriptionIdentifiers(for message: BrokerMessage, in session: BrokerSession) -> [Int] {
        guard session.protocolVersion == .v5, !session.subscriptionOptions.isEmpty, !message.topic.isEmpty else { return [] }
        let match = SubscriptionMatch.resolve(
            topic: message.topic, subscriptions: session.subscriptions, options: session.subscriptionOptions,
            publishedBySameSession: false)
        return (match?.identifiers ?? []).sorted()
    }

    /// The whole persistent state as a snapshot file: retained messages, then every persistent session with its
    /// subscriptions, inbound QoS 2 ids and deliveries (each message written once, before its first delivery), then
    /// the messages accepted but not routed yet, then the end record.
    static func make(of core: BrokerCore, generation: UInt64, pending: [StoredMessage]) -> ByteBuffer {
        var buffer = PersistenceFileFormat.header(kind: .snapshot, generation: generation)
        var count: UInt64 = 0
        let clock = PersistenceClock.now(uptime: core.now)
        func add(_ record: PersistentRecord) {
            PersistenceFileFormat.appendRecord(record, to: &buffer)
            count += 1
        }
        for message in core.retainedStore.allMessages() where !MQTTTopic.isSystemTopic(message.topic) {
            add(
                .retained(
                    topic: message.topic, qos: message.qos, payload: message.payload,
                    properties: message.properties.withoutSubscriptionIdentifiers,
                    expiresAt: message.expiresAt.map { clock.wallTime(of: $0) }))
        }
        var written = Set<UInt64>()
        func addMessage(_ message: BrokerMessage) {
            guard written.insert(message.storeID).inserted else { return }
            add(.message(StoredMessage(message, mustRoute: false, origin: nil, clock: clock)))
        }
        for session in core.sessions.byKey.values where !session.cleanSession {
            let clientID = session.clientID
            add(.sessionCreated(clientID: clientID))
            add(.sessionLifetime(clientID: clientID, protocolVersion: session.protocolVersion, expiryInterval: session.expiryInterval))
            for (filter, qos) in session.subscriptions {
                add(.subscribed(clientID: clientID, filter: filter.base, qos: qos))
                if let options = session.subscriptionOptions[filter], !options.isDefault {
                    add(.subscriptionOptions(clientID: clientID, filter: filter.base, options: options))
                }
            }
            for packetID in session.inboundQoS2.pendingIDs {
                add(.inboundReceived(clientID: clientID, packetID: packetID))
            }
            if let will = session.delayedWill {
                add(.delayedWill(clientID: clientID, will: StoredWill(will.message, publishAt: will.publishAt, clock: clock)))
            }
            for (packetID, entry) in session.outbound.inflight.entries.sorted(by: { $0.value.sequence < $1.value.sequence }) {
                let delivery = entry.delivery
                let storeID = delivery.message.storeID
                guard storeID != 0 else { continue }
                switch entry.state {
                case .awaitingPubAck:
                    // QoS 1 in flight is re-sent from the queue (with a new packet id) after a restart.
                    addMessage(delivery.message)
                    add(.delivery(clientID: clientID, storeID: storeID, qos: delivery.qos, retain: delivery.retain, packetID: 0, state: .queued))
                case .awaitingPubRec:
                    addMessage(delivery.message)
                    add(.delivery(clientID: clientID, storeID: storeID, qos: delivery.qos, retain: delivery.retain, packetID: packetID, state: .awaitingPubRec))
                case .awaitingPubComp:
                    add(.delivery(clientID: clientID, storeID: storeID, qos: delivery.qos, retain: delivery.retain, packetID: packetID, state: .awaitingPubComp))
                }
            }
            for queued in session.outbound.queue where queued.qos != .atMostOnce && queued.message.storeID != 0 {
                addMessage(queued.message)
                add(.delivery(clientID: clientID, storeID: queued.message.storeID, qos: queued.qos, retain: queued.retain, packetID: 0, state: .queued))
            }
        }
        for message in pending {
            add(.message(message))
        }
        add(.snapshotEnd(recordCount: count))
        return buffer
    }
}
