import MQTTCore
import NIOCore

/// The broker state that persistence keeps, in both directions: rebuilt into a core from a recovered
/// ``PersistentState`` at start, and written out of a core as a snapshot file when the log is compacted.
enum BrokerStateSnapshot {
    /// Rebuilds sessions, subscriptions, flows, inbound QoS 2 ids and retained messages from `state`, then routes
    /// the messages that were accepted but not routed before the broker stopped. Runs before the core has its ``PersistenceStore``,
    /// so nothing is recorded twice; the snapshot written next captures the result.
    static func restore(_ state: PersistentState, into core: BrokerCore) -> (sessions: Int, skipped: Int) {
        for (topic, retained) in state.retained {
            core.retainedStore.apply(BrokerMessage(topic: topic.base, payload: retained.payload, qos: retained.qos, retain: true))
        }
        var skipped = 0
        for (clientID, stored) in state.sessions.sorted(by: { $0.key < $1.key }) {
            let session = core.sessions.makeSession(clientID: clientID.base, cleanSession: false)
            for (filter, qos) in stored.subscriptions {
                core.subscribe(session, to: filter.base, qos: qos)
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
            core.route(message.brokerMessage)
        }
        if skipped > 0 {
            core.logger.warning("persistence: deliveries whose message was not stored were skipped", metadata: ["count": "\(skipped)"])
        }
        return (state.sessions.count, skipped)
    }

    /// The whole persistent state as a snapshot file: retained messages, then every persistent session with its
    /// subscriptions, inbound QoS 2 ids and deliveries (each message written once, before its first delivery), then
    /// the messages accepted but not routed yet, then the end record.
    static func make(of core: BrokerCore, generation: UInt64, pending: [StoredMessage]) -> ByteBuffer {
        var buffer = PersistenceFileFormat.header(kind: .snapshot, generation: generation)
        var count: UInt64 = 0
        func add(_ record: PersistentRecord) {
            PersistenceFileFormat.appendRecord(record, to: &buffer)
            count += 1
        }
        for message in core.retainedStore.allMessages() where !MQTTTopic.isSystemTopic(message.topic) {
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
        for session in core.sessions.byKey.values where !session.cleanSession {
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
}
