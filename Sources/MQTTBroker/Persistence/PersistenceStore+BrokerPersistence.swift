import Logging
import MQTTCore
import NIOCore

/// The store as the broker's ``BrokerPersistence``: opened (recovered into the core) at start; clean sessions get
/// what ``NoPersistence`` gives them.
extension PersistenceStore: BrokerPersistence {
    /// Recovers the persisted state (when persistence is configured) into this core, writes it as a fresh snapshot
    /// and starts a new log. The broker binds its listeners only after this succeeds. `onSync` is told how long each
    /// of the writer's syncs took, on the writer's thread (the metrics' sync histogram).
    static func open(for core: BrokerCore, onSync: (@Sendable (Duration) -> Void)? = nil) -> EventLoopFuture<Void> {
        guard let configuration = core.configuration.persistence else { return core.eventLoop.makeSucceededVoidFuture() }
        let logger = core.logger
        return PersistenceStore.recover(configuration: configuration, eventLoop: core.eventLoop, logger: logger, onSync: onSync)
            .assumeIsolated()
            .flatMap { writer, result in
                let restored = BrokerStateSnapshot.restore(result.state, into: core)
                let store = PersistenceStore(
                    configuration: configuration, eventLoop: core.eventLoop, logger: logger, writer: writer, generation: result.generation)
                store.core = core
                core.persistenceStarted(store)
                logger.info(
                    "persistence recovered",
                    metadata: [
                        "directory": "\(configuration.directory)", "snapshotRecords": "\(result.snapshotRecords)",
                        "logRecords": "\(result.logRecords)", "sessions": "\(result.state.sessions.count)",
                        "deliveries": "\(result.state.deliveryCount)", "retained": "\(result.state.retained.count)",
                        "routedOnRecovery": "\(result.state.pendingRoutes.count)", "skippedDeliveries": "\(restored.skipped)",
                        "expiredMessages": "\(restored.expired)", "formatVersion": "\(result.formatVersion)",
                        "tornTailBytes": "\(result.tornTailBytes)", "milliseconds": "\(result.duration.milliseconds)",
                    ])
                return store.finishRecovery(highestStoreID: result.state.highestStoreID, persistentSessions: restored.sessions)
            }
            .nonisolated()
    }

    func acceptPublish(
        _ message: consuming BrokerMessage, from session: BrokerSession, routable: Bool,
        acknowledgement: MQTTAcknowledgement?, via connection: BrokerConnectionHandler
    ) {
        var qos2PacketID: UInt16?
        if let acknowledgement, acknowledgement.kind == .pubrec { qos2PacketID = acknowledgement.packetID }
        accept(message, from: session, qos2PacketID: qos2PacketID, routable: routable, core: connection.core, publisher: connection) {
            if let acknowledgement { connection.writeAcknowledgement(acknowledgement) }
        }
    }

    func writeWhenDurable(_ acknowledgement: MQTTAcknowledgement, via connection: BrokerConnectionHandler) {
        whenDurable { connection.writeAcknowledgement(acknowledgement) }
    }

    func whenDurable(_ action: @escaping () -> Void) {
        whenDurable(pendingMessage: nil, action)
    }

    func releaseInboundQoS2(_ session: BrokerSession, packetID: UInt16, via connection: BrokerConnectionHandler) {
        if session.inboundQoS2.releaseReceived(packetID: packetID) {
            inboundReleased(session, packetID: packetID)
        }
        let pubcomp = MQTTAcknowledgement(.pubcomp, packetID: packetID)
        whenDurable { connection.writeAcknowledgement(pubcomp) }
    }

    /// QoS 2 steps of a persistent session wait for their records; a clean session's are written at once.
    func performOutbound(_ actions: [OutboundAction], for session: BrokerSession, via connection: BrokerConnectionHandler) {
        guard !session.cleanSession else {
            connection.write(actions)
            return
        }
        perform(actions, for: session, via: connection)
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
