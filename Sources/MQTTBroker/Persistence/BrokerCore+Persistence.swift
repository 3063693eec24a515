import Logging
import MQTTCore
import NIOCore

// [persist] The broker core's side of persistence: recovery at start, snapshots, and the hooks the connection
// handler calls. Everything runs on the core's event loop.
extension BrokerCore {
    // MARK: Start and stop

    /// Recovers the persisted state (when persistence is configured) into this core, writes it as a fresh snapshot
    /// and starts a new log. The broker binds its listeners only after this succeeds.
    func openPersistence() -> EventLoopFuture<Void> {
        guard let configuration = configuration.persistence else { return eventLoop.makeSucceededVoidFuture() }
        let logger = self.logger
        return PersistenceStore.recover(configuration: configuration, eventLoop: eventLoop, logger: logger)
            .assumeIsolated()
            .flatMap { writer, result in
                let restored = self.restore(result.state)
                let store = PersistenceStore(
                    configuration: configuration, eventLoop: self.eventLoop, logger: logger, writer: writer, generation: result.generation)
                store.core = self
                self.persistence = store
                logger.info(
                    "persistence recovered",
                    metadata: [
                        "directory": "\(configuration.directory)", "snapshotRecords": "\(result.snapshotRecords)",
                        "logRecords": "\(result.logRecords)", "sessions": "\(result.state.sessions.count)",
                        "deliveries": "\(result.state.deliveryCount)", "retained": "\(result.state.retained.count)",
                        "routedOnRecovery": "\(result.state.pendingRoutes.count)", "skippedDeliveries": "\(restored.skipped)",
                        "tornTailBytes": "\(result.tornTailBytes)", "milliseconds": "\(result.duration.milliseconds)",
                    ])
                return store.finishRecovery(highestStoreID: result.state.highestStoreID, persistentSessions: restored.sessions)
            }
            .nonisolated()
    }

    /// Writes what is pending and a final snapshot, then releases the directory.
    func closePersistence() -> EventLoopFuture<Void> {
        guard let persistence else { return eventLoop.makeSucceededVoidFuture() }
        return persistence.close()
    }

    /// Rebuilds sessions, subscriptions, flows, inbound QoS 2 ids and retained messages from `state`, then routes
    /// the messages that were accepted but not routed before the broker stopped. Runs before ``persistence`` is set,
    /// so nothing is recorded twice; the snapshot written next captures the result.
    private func restore(_ state: PersistentState) -> (sessions: Int, skipped: Int) {
        for (topic, retained) in state.retained {
            retainedStore.apply(BrokerMessage(topic: topic.base, payload: retained.payload, qos: retained.qos, retain: true))
        }
        var skipped = 0
        for (clientID, stored) in state.sessions.sorted(by: { $0.key < $1.key }) {
            let session = makeSession(clientID: clientID.base, cleanSession: false)
            for (filter, qos) in stored.subscriptions {
                subscribe(session, to: filter.base, qos: qos)
            }
            for packetID in stored.inboundQoS2 {
                _ = session.inboundQoS2.publishReceived(packetID: packetID)
            }
            var inflight: [(packetID: UInt16, delivery: OutboundDelivery, state: OutboundFlow.InflightState)] = []
            var queued: [OutboundFlow.QueuedMessage] = []
            for delivery in stored.deliveries {
                var message: BrokerMessage
                if let stored = state.messages[delivery.storeID] {
                    message = stored.brokerMessage
                    message.retain = false
                } else if delivery.state == .awaitingPubComp {
                    // Only the packet id matters once PUBREC arrived.
                    message = BrokerMessage(topic: "", payload: ByteBuffer(), qos: delivery.qos, retain: false, storeID: delivery.storeID)
                } else {
                    skipped += 1
                    continue
                }
                if let packetID = delivery.packetID, delivery.state != .queued {
                    inflight.append(
                        (packetID, OutboundDelivery(message: message, qos: delivery.qos, retain: delivery.retain, dup: false, packetID: packetID),
                         delivery.state == .awaitingPubComp ? .awaitingPubComp : .awaitingPubRec))
                } else {
                    queued.append(OutboundFlow.QueuedMessage(message: message, qos: delivery.qos, retain: delivery.retain))
                }
            }
            session.outbound.restore(inflight: inflight, queued: queued)
        }
        for storeID in state.pendingRoutes {
            guard let message = state.messages[storeID] else { continue }
            route(message.brokerMessage)
        }
        if skipped > 0 {
            logger.warning("persistence: deliveries whose message was not stored were skipped", metadata: ["count": "\(skipped)"])
        }
        return (state.sessions.count, skipped)
    }

    /// The whole persistent state as a snapshot file: retained messages, then every persistent session with its
    /// subscriptions, inbound QoS 2 ids and deliveries (each message written once, before its first delivery), then
    /// the messages accepted but not routed yet, then the end record.
    func makeSnapshot(generation: UInt64, pending: [StoredMessage]) -> ByteBuffer {
        var buffer = PersistenceFileFormat.header(kind: .snapshot, generation: generation)
        var count: UInt64 = 0
        func add(_ record: PersistentRecord) {
            PersistenceFileFormat.appendRecord(record, to: &buffer)
            count += 1
        }
        for message in retainedStore.allMessages() where !MQTTTopic.isSystemTopic(message.topic) {
            add(.retained(topic: message.topic, qos: message.qos, payload: message.payload))
        }
        var written = Set<UInt64>()
        func addMessage(_ message: BrokerMessage) {
            guard written.insert(message.storeID).inserted else { return }
            add(
                .message(
                    StoredMessage(
                        id: message.storeID, topic: message.topic, qos: message.qos, retain: message.retain,
                        payload: message.payload, mustRoute: false, origin: nil)))
        }
        for session in sessionsByKey.values where !session.cleanSession {
            let clientID = session.clientID
            add(.sessionCreated(clientID: clientID))
            for (filter, qos) in session.subscriptions {
                add(.subscribed(clientID: clientID, filter: filter.base, qos: qos))
            }
            for packetID in session.inboundQoS2.pendingIDs {
                add(.inboundReceived(clientID: clientID, packetID: packetID))
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

    // MARK: Hooks for the connection handler

    /// Routes an inbound PUBLISH and writes `acknowledgement` (PUBACK, PUBREC for a new QoS 2 message, nil at
    /// QoS 0) to `connection`: at once without persistence (no closure, no allocation), otherwise once the message is
    /// durable when it must be (see ``PersistenceStore/accept(_:from:qos2PacketID:routable:core:acknowledge:)``).
    func acceptPublish(
        _ message: consuming BrokerMessage, from session: BrokerSession, routable: Bool,
        acknowledgement: MQTTAcknowledgement?, via connection: BrokerConnectionHandler
    ) {
        guard let persistence else {
            if routable { route(message, from: connection) }
            if let acknowledgement { connection.writeAcknowledgement(acknowledgement) }
            return
        }
        var qos2PacketID: UInt16?
        if let acknowledgement, acknowledgement.kind == .pubrec { qos2PacketID = acknowledgement.packetID }
        persistence.accept(
            message, from: session, qos2PacketID: qos2PacketID, routable: routable, core: self, publisher: connection
        ) {
            if let acknowledgement { connection.writeAcknowledgement(acknowledgement) }
        }
    }

    /// Writes `acknowledgement` to `connection` now without persistence, or once everything recorded so far is durable.
    func writeWhenDurable(_ acknowledgement: MQTTAcknowledgement, via connection: BrokerConnectionHandler) {
        guard let persistence else {
            connection.writeAcknowledgement(acknowledgement)
            return
        }
        persistence.whenDurable { connection.writeAcknowledgement(acknowledgement) }
    }

    /// Runs `action` now without persistence, or once everything recorded so far is durable (SUBACK, UNSUBACK,
    /// PUBREC of a duplicate QoS 2 PUBLISH).
    func whenDurable(_ action: @escaping () -> Void) {
        guard let persistence else {
            action()
            return
        }
        persistence.whenDurable(action)
    }

    /// PUBREL from the client: forgets the inbound QoS 2 id and writes PUBCOMP, after the release is durable for a
    /// persistent session.
    func releaseInboundQoS2(_ session: BrokerSession, packetID: UInt16, via connection: BrokerConnectionHandler) {
        let pubcomp = MQTTAcknowledgement(.pubcomp, packetID: packetID)
        guard let persistence else {
            session.inboundQoS2.releaseReceived(packetID: packetID)
            connection.writeAcknowledgement(pubcomp)
            return
        }
        if session.inboundQoS2.releaseReceived(packetID: packetID) {
            persistence.inboundReleased(session, packetID: packetID)
        }
        persistence.whenDurable { connection.writeAcknowledgement(pubcomp) }
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
