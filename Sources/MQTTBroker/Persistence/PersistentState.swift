import MQTTCore
import NIOCore

/// The broker state described by a snapshot and a log, rebuilt record by record during recovery.
///
/// A value type with no I/O: ``apply(_:)`` folds one record in. Records that refer to something unknown (a session
/// or message the earlier records never created) cannot come from this broker's own writes; they are skipped and
/// counted in ``inconsistencies`` so recovery can report them.
struct PersistentState: Sendable {
    /// One outbound QoS 1/2 delivery a session holds.
    struct Delivery: Sendable, Hashable {
        var storeID: UInt64
        var qos: QoS
        var retain: Bool
        /// Set for QoS 2 deliveries whose PUBLISH was sent (the id must be kept so the client can deduplicate).
        var packetID: UInt16?
        var state: StoredDeliveryState
    }

    /// One persistent session. Deliveries are indexed by message id and by packet id, so replaying a long log
    /// costs a hash lookup per record, not a scan of the session's queue.
    struct Session: Sendable, Hashable {
        var subscriptions: [UTF8Key<String>: QoS] = [:]
        /// MQTT 5 options of the filters subscribed with other than the defaults (format version 2).
        var subscriptionOptions: [UTF8Key<String>: SubscriptionOptions] = [:]
        /// The protocol level and Session Expiry Interval of the session's last ``PersistentRecord/sessionLifetime(clientID:protocolVersion:expiryInterval:)``;
        /// nil for a session stored by format version 1 (an MQTT 3.1.1 session).
        var lifetime: (protocolVersion: MQTTProtocolVersion, expiryInterval: UInt32)?
        var inboundQoS2: Set<UInt16> = []
        /// The will waiting for its delay since the client went away (format version 3).
        var delayedWill: StoredWill?
        /// Message id -> (arrival order, delivery).
        private(set) var deliveryByID: [UInt64: (order: UInt64, delivery: Delivery)] = [:]
        /// Packet id -> message id, for QoS 2 deliveries whose PUBLISH was sent.
        private var idByPacketID: [UInt16: UInt64] = [:]
        private var nextOrder: UInt64 = 0

        static func == (lhs: Session, rhs: Session) -> Bool {
            lhs.subscriptions == rhs.subscriptions && lhs.subscriptionOptions == rhs.subscriptionOptions
                && lhs.lifetime?.protocolVersion == rhs.lifetime?.protocolVersion
                && lhs.lifetime?.expiryInterval == rhs.lifetime?.expiryInterval
                && lhs.inboundQoS2 == rhs.inboundQoS2 && lhs.delayedWill == rhs.delayedWill
                && lhs.deliveries == rhs.deliveries
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(subscriptions)
            hasher.combine(subscriptionOptions)
            hasher.combine(lifetime?.protocolVersion)
            hasher.combine(lifetime?.expiryInterval)
            hasher.combine(inboundQoS2)
            hasher.combine(delayedWill)
            hasher.combine(deliveries)
        }

        /// In the order the session received them.
        var deliveries: [Delivery] {
            deliveryByID.values.sorted { $0.order < $1.order }.map(\.delivery)
        }

        var deliveryCount: Int { deliveryByID.count }

        mutating func append(_ delivery: Delivery) {
            deliveryByID[delivery.storeID] = (nextOrder, delivery)
            nextOrder += 1
            if let packetID = delivery.packetID { idByPacketID[packetID] = delivery.storeID }
        }

        /// Changes the delivery of message `storeID` (or of `packetID`); false when there is none or `accept` refuses it.
        mutating func update(storeID: UInt64? = nil, packetID: UInt16? = nil, if accept: (Delivery) -> Bool, _ change: (inout Delivery) -> Void) -> Bool {
            guard let id = storeID ?? packetID.flatMap({ idByPacketID[$0] }), var entry = deliveryByID[id], accept(entry.delivery) else {
                return false
            }
            change(&entry.delivery)
            deliveryByID[id] = entry
            if let packetID = entry.delivery.packetID { idByPacketID[packetID] = id }
            return true
        }

        /// Removes the delivery of message `storeID` (or of `packetID`); false when there is none or `accept` refuses it.
        mutating func remove(storeID: UInt64? = nil, packetID: UInt16? = nil, if accept: (Delivery) -> Bool) -> Bool {
            guard let id = storeID ?? packetID.flatMap({ idByPacketID[$0] }), let entry = deliveryByID[id], accept(entry.delivery) else {
                return false
            }
            deliveryByID[id] = nil
            if let packetID = entry.delivery.packetID, idByPacketID[packetID] == id { idByPacketID[packetID] = nil }
            return true
        }
    }

    /// The retained message of one topic.
    struct Retained: Sendable, Hashable {
        var qos: QoS
        var payload: ByteBuffer
        var properties: MQTTProperties = .none
        var expiresAt: WallClockTime? = nil
    }

    /// By client identifier, compared byte for byte (see ``UTF8Key``).
    var sessions: [UTF8Key<String>: Session] = [:]
    var messages: [UInt64: StoredMessage] = [:]
    /// Messages accepted from publishers and not routed yet, in arrival order; recovery routes them.
    var pendingRoutes: [UInt64] = []
    /// By topic, compared byte for byte (see ``UTF8Key``).
    var retained: [UTF8Key<String>: Retained] = [:]
    /// Records that referred to unknown sessions, messages or packet ids.
    var inconsistencies = 0
    /// The highest message id seen, so new ids never collide with stored ones.
    var highestStoreID: UInt64 = 0

    init() {}

    /// Folds one record into the state.
    mutating func apply(_ record: PersistentRecord) {
        switch record {
        case .sessionCreated(let clientID):
            sessions[UTF8Key(clientID)] = Session()
        case .sessionRemoved(let clientID):
            if sessions.removeValue(forKey: UTF8Key(clientID)) == nil { inconsistencies += 1 }
        case .subscribed(let clientID, let filter, let qos):
            updateSession(clientID) {
                $0.subscriptions[UTF8Key(filter)] = qos
                $0.subscriptionOptions[UTF8Key(filter)] = nil  // an options record follows when they are not the defaults
            }
        case .unsubscribed(let clientID, let filter):
            updateSession(clientID) {
                $0.subscriptions[UTF8Key(filter)] = nil
                $0.subscriptionOptions[UTF8Key(filter)] = nil
            }
        case .subscriptionOptions(let clientID, let filter, let options):
            updateSession(clientID) { $0.subscriptionOptions[UTF8Key(filter)] = options.isDefault ? nil : options }
        case .sessionLifetime(let clientID, let protocolVersion, let expiryInterval):
            updateSession(clientID) {
                $0.lifetime = (protocolVersion, expiryInterval)
                // As when the client connects (SessionLifetime.apply): a 3.1.1 client's session has no options.
                if protocolVersion != .v5 { $0.subscriptionOptions = [:] }
            }
        case .delayedWill(let clientID, let will):
            updateSession(clientID) { $0.delayedWill = will }
        case .delayedWillCleared(let clientID):
            updateSession(clientID) { $0.delayedWill = nil }
        case .message(let message):
            messages[message.id] = message
            highestStoreID = max(highestStoreID, message.id)
            if message.mustRoute {
                pendingRoutes.append(message.id)
            }
            if let origin = message.origin {
                updateSession(origin.clientID) { $0.inboundQoS2.insert(origin.packetID) }
            }
        case .routed(let storeID, let targets):
            guard messages[storeID] != nil else {
                inconsistencies += 1
                return
            }
            if let index = pendingRoutes.lastIndex(of: storeID) {
                pendingRoutes.remove(at: index)
            }
            for target in targets {
                updateSession(target.clientID) {
                    $0.append(Delivery(storeID: storeID, qos: target.qos, retain: target.retain, packetID: nil, state: .queued))
                }
            }
        case .outboundSent(let clientID, let packetID, let storeID):
            checked(clientID) {
                $0.update(storeID: storeID, if: { $0.packetID == nil }) {
                    $0.packetID = packetID
                    $0.state = .awaitingPubRec
                }
            }
        case .outboundReleased(let clientID, let packetID):
            checked(clientID) {
                $0.update(packetID: packetID, if: { $0.state == .awaitingPubRec }) { $0.state = .awaitingPubComp }
            }
        case .outboundCompleted(let clientID, let packetID):
            checked(clientID) { $0.remove(packetID: packetID, if: { $0.state == .awaitingPubComp }) }
        case .outboundAcked(let clientID, let storeID):
            checked(clientID) { $0.remove(storeID: storeID, if: { $0.qos == .atLeastOnce }) }
        case .inboundReceived(let clientID, let packetID):
            updateSession(clientID) { $0.inboundQoS2.insert(packetID) }
        case .inboundReleased(let clientID, let packetID):
            updateSession(clientID) { $0.inboundQoS2.remove(packetID) }
        case .retained(let topic, let qos, let payload, let properties, let expiresAt):
            retained[UTF8Key(topic)] =
                payload.readableBytes == 0
                ? nil : Retained(qos: qos, payload: payload, properties: properties, expiresAt: expiresAt)
        case .delivery(let clientID, let storeID, let qos, let retain, let packetID, let state):
            highestStoreID = max(highestStoreID, storeID)
            updateSession(clientID) {
                $0.append(Delivery(storeID: storeID, qos: qos, retain: retain, packetID: packetID == 0 ? nil : packetID, state: state))
            }
        case .snapshotEnd:
            break
        }
    }

    /// Drops messages no session holds any more and no pending route needs (the payload of a delivery that waits
    /// for PUBCOMP is not needed either).
    mutating func pruneMessages() {
        var needed = Set(pendingRoutes)
        for session in sessions.values {
            for (storeID, entry) in session.deliveryByID where entry.delivery.state != .awaitingPubComp {
                needed.insert(storeID)
            }
        }
        messages = messages.filter { needed.contains($0.key) }
    }

    /// The number of deliveries held by all sessions.
    var deliveryCount: Int { sessions.values.reduce(0) { $0 + $1.deliveryCount } }

    private mutating func updateSession(_ clientID: String, _ change: (inout Session) -> Void) {
        let key = UTF8Key(clientID)
        guard var session = sessions[key] else {
            inconsistencies += 1
            return
        }
        sessions[key] = nil  // keep the value uniquely referenced while it changes
        change(&session)
        sessions[key] = session
    }

    /// Applies a delivery change that reports whether it found its delivery; a miss is an inconsistency.
    private mutating func checked(_ clientID: String, _ change: (inout Session) -> Bool) {
        var found = false
        updateSession(clientID) { found = change(&$0) }
        if !found, sessions[UTF8Key(clientID)] != nil { inconsistencies += 1 }
    }
}
