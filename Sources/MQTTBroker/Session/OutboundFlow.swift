import MQTTCore
import NIOCore

/// One PUBLISH the broker is about to write to a client.
struct OutboundDelivery: Sendable, Hashable {
    /// The message being delivered.
    var message: BrokerMessage
    /// The QoS of this delivery: `min(message QoS, granted QoS)`.
    var qos: QoS
    /// RETAIN flag of this copy: set only when it answers a new subscription.
    var retain: Bool
    /// DUP flag: set when the PUBLISH is re-sent on session resume.
    var dup: Bool
    /// The packet identifier; nil exactly for QoS 0.
    var packetID: UInt16?

    /// The PUBLISH packet this delivery becomes on the wire.
    var packet: PublishPacket {
        PublishPacket(topic: message.topic, payload: message.payload, qos: qos, retain: retain, dup: dup, packetID: packetID)
    }
}

/// What the broker writes as a consequence of an outbound-flow event.
enum OutboundAction: Sendable, Hashable {
    /// Write this PUBLISH.
    case publish(OutboundDelivery)
    /// Write PUBREL for this packet identifier (second half of an outbound QoS 2 exchange).
    case pubrel(UInt16)
}

/// The broker-to-client half of a session: the inflight window of QoS 1/2 messages with packet identifier
/// allocation, and the queue behind it (MQTT 3.1.1 sections 4.3, 4.4 and 4.6).
///
/// A value type that returns what to send; the connection handler writes it. Messages leave the queue in the order
/// they entered it, so order per topic and QoS is kept (MQTT-4.6.0-6).
struct OutboundFlow: Sendable {
    /// Where an outbound QoS 1/2 message stands.
    enum InflightState: Sendable, Hashable {
        /// QoS 1 sent; waiting for PUBACK.
        case awaitingPubAck
        /// QoS 2 sent; waiting for PUBREC.
        case awaitingPubRec
        /// PUBREC received and PUBREL sent; waiting for PUBCOMP.
        case awaitingPubComp
    }

    /// One message in the inflight window.
    struct InflightEntry: Sendable, Hashable {
        var delivery: OutboundDelivery
        var state: InflightState
        /// Send order, used to re-send in the original order on resume.
        var sequence: UInt64
    }

    /// A queued message waiting for room in the inflight window (or for the client to come back).
    struct QueuedMessage: Sendable, Hashable {
        var message: BrokerMessage
        var qos: QoS
        var retain: Bool
    }

    /// The outcome of offering a message to the flow.
    enum EnqueueOutcome: Sendable, Hashable {
        /// Write this delivery now.
        case send(OutboundDelivery)
        /// Stored in the queue; it goes out when the window has room and the client is online.
        case queued
        /// The queue is full; the message is dropped (counted in ``OutboundFlow/droppedCount``).
        case dropped
        /// A QoS 0 message for an offline client: not queued, by design (mosquitto's default).
        case discarded
    }

    /// Maximum inflight QoS 1/2 messages; 0 means unlimited (bounded only by the 65535 packet identifiers).
    let maxInflight: Int
    /// Maximum queued messages; 0 means unlimited.
    let maxQueued: Int
    /// Whether QoS 0 messages are queued while the client is offline.
    let queueQoS0WhileOffline: Bool

    /// Whether a connection is attached; offline flows queue instead of sending.
    private(set) var isOnline = false
    private(set) var inflight: [UInt16: InflightEntry] = [:]
    private(set) var queue = CircularBuffer<QueuedMessage>()
    /// Messages dropped because the queue was full.
    private(set) var droppedCount = 0
    private var nextPacketID: UInt16 = 1
    private var nextSequence: UInt64 = 0

    init(maxInflight: Int, maxQueued: Int, queueQoS0WhileOffline: Bool = false) {
        self.maxInflight = max(0, maxInflight)
        self.maxQueued = max(0, maxQueued)
        self.queueQoS0WhileOffline = queueQoS0WhileOffline
    }

    /// The number of inflight messages.
    var inflightCount: Int { inflight.count }
    /// The number of queued messages.
    var queuedCount: Int { queue.count }

    /// Offers a message for delivery at `qos` (already reduced to the granted QoS).
    mutating func enqueue(_ message: BrokerMessage, qos: QoS, retain: Bool) -> EnqueueOutcome {
        if qos == .atMostOnce {
            if isOnline {
                return .send(OutboundDelivery(message: message, qos: qos, retain: retain, dup: false, packetID: nil))
            }
            guard queueQoS0WhileOffline else { return .discarded }
            return append(QueuedMessage(message: message, qos: qos, retain: retain))
        }
        if isOnline, queue.isEmpty, let delivery = startInflight(message, qos: qos, retain: retain) {
            return .send(delivery)
        }
        return append(QueuedMessage(message: message, qos: qos, retain: retain))
    }

    /// PUBACK from the client: completes a QoS 1 delivery and releases queued messages into the window.
    mutating func pubAckReceived(packetID: UInt16) -> [OutboundAction] {
        guard inflight[packetID]?.state == .awaitingPubAck else { return [] }
        inflight[packetID] = nil
        return drainQueue()
    }

    /// PUBREC from the client: the QoS 2 message arrived; answer with PUBREL. Unknown identifiers are answered
    /// too, so a client that lost track can still finish its exchange.
    mutating func pubRecReceived(packetID: UInt16) -> [OutboundAction] {
        if var entry = inflight[packetID], entry.state == .awaitingPubRec {
            entry.state = .awaitingPubComp
            // The payload is no longer needed; only the identifier and the order matter from here on.
            entry.delivery.message.payload = ByteBuffer()
            inflight[packetID] = entry
        }
        return [.pubrel(packetID)]
    }

    /// PUBCOMP from the client: completes a QoS 2 delivery and releases queued messages into the window.
    mutating func pubCompReceived(packetID: UInt16) -> [OutboundAction] {
        guard inflight[packetID]?.state == .awaitingPubComp else { return [] }
        inflight[packetID] = nil
        return drainQueue()
    }

    /// The client is (again) connected: re-send every unacknowledged PUBLISH with DUP set and every pending PUBREL,
    /// in their original order (MQTT-4.4.0-1), then release queued messages into the window.
    mutating func resume() -> [OutboundAction] {
        isOnline = true
        var actions: [OutboundAction] = []
        for (packetID, entry) in inflight.sorted(by: { $0.value.sequence < $1.value.sequence }) {
            switch entry.state {
            case .awaitingPubAck, .awaitingPubRec:
                inflight[packetID]?.delivery.dup = true
                var delivery = entry.delivery
                delivery.dup = true
                actions.append(.publish(delivery))
            case .awaitingPubComp:
                actions.append(.pubrel(packetID))
            }
        }
        actions.append(contentsOf: drainQueue())
        return actions
    }

    /// The connection went away; keep the window and the queue for the next ``resume()``.
    mutating func suspend() {
        isOnline = false
    }

    private mutating func append(_ queued: QueuedMessage) -> EnqueueOutcome {
        if maxQueued > 0, queue.count >= maxQueued {
            droppedCount += 1
            return .dropped
        }
        queue.append(queued)
        return .queued
    }

    /// Moves queued messages into the window while it has room.
    private mutating func drainQueue() -> [OutboundAction] {
        guard isOnline else { return [] }
        var actions: [OutboundAction] = []
        while let next = queue.first {
            if next.qos == .atMostOnce {
                queue.removeFirst()
                actions.append(.publish(OutboundDelivery(message: next.message, qos: .atMostOnce, retain: next.retain, dup: false, packetID: nil)))
                continue
            }
            guard let delivery = startInflight(next.message, qos: next.qos, retain: next.retain) else { break }
            queue.removeFirst()
            actions.append(.publish(delivery))
        }
        return actions
    }

    private var windowHasRoom: Bool {
        maxInflight == 0 || inflight.count < maxInflight
    }

    private mutating func startInflight(_ message: BrokerMessage, qos: QoS, retain: Bool) -> OutboundDelivery? {
        guard windowHasRoom, let packetID = allocatePacketID() else { return nil }
        let delivery = OutboundDelivery(message: message, qos: qos, retain: retain, dup: false, packetID: packetID)
        inflight[packetID] = InflightEntry(
            delivery: delivery,
            state: qos == .exactlyOnce ? .awaitingPubRec : .awaitingPubAck,
            sequence: nextSequence
        )
        nextSequence &+= 1
        return delivery
    }

    /// The next free packet identifier after the last one handed out, wrapping from 65535 to 1 and skipping
    /// identifiers still in flight. Nil when all 65535 are in use.
    private mutating func allocatePacketID() -> UInt16? {
        guard inflight.count < Int(UInt16.max) else { return nil }
        while true {
            let candidate = nextPacketID
            nextPacketID = candidate == UInt16.max ? 1 : candidate + 1
            if inflight[candidate] == nil { return candidate }
        }
    }
}

// [persist] Rebuilding a flow from persisted state (Persistence/BrokerCore+Persistence.swift).
extension OutboundFlow {
    /// Replaces the (empty, offline) flow's window and queue with recovered ones: `inflight` in send order keeps its
    /// packet identifiers and states (re-sent with DUP on resume), `queued` in arrival order. The next packet id
    /// follows the highest one restored.
    mutating func restore(inflight entries: [(packetID: UInt16, delivery: OutboundDelivery, state: InflightState)], queued: [QueuedMessage]) {
        for entry in entries {
            inflight[entry.packetID] = InflightEntry(delivery: entry.delivery, state: entry.state, sequence: nextSequence)
            nextSequence &+= 1
            nextPacketID = entry.packetID == UInt16.max ? 1 : entry.packetID + 1
        }
        for message in queued {
            queue.append(message)
        }
    }
}
