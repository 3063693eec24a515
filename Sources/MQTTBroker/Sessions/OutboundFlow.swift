import DequeModule
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

/// A client's acknowledgement of a PUBLISH the broker sent it.
enum OutboundAcknowledgement: Sendable, Hashable {
    /// PUBACK: a QoS 1 delivery is complete.
    case puback
    /// PUBREC: a QoS 2 delivery arrived; PUBREL follows.
    case pubrec
    /// PUBCOMP: a QoS 2 delivery is complete.
    case pubcomp
}

/// The broker-to-client half of a session: the inflight window of QoS 1/2 messages with packet identifier
/// allocation, and the queue behind it (MQTT 3.1.1 sections 4.3, 4.4 and 4.6).
///
/// A value type that returns what to send; the connection handler writes it. Messages leave the queue in the order
/// they entered it, so order per topic and QoS is kept (MQTT-4.6.0-6).
struct OutboundFlow: Sendable {
    /// Where an outbound QoS 1/2 message stands.
    /// What an acknowledgement from the client did to the window.
    enum AcknowledgementOutcome: Sendable, Hashable {
        /// It completed or advanced the delivery it names.
        case accepted
        /// No delivery has that packet id (a late duplicate, or state lost in a restart): ignored.
        case unknownPacketID
        /// It does not fit the delivery's flow (PUBREC or PUBCOMP for QoS 1, PUBACK for QoS 2, PUBCOMP before
        /// PUBREL): a protocol violation.
        case wrongFlow
    }

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

        /// PUBREC arrived: when the entry awaits one, it now awaits PUBCOMP and drops its payload (only the
        /// identifier and the order matter from here on). Mutating, so the window changes the entry in place.
        /// PUBREC arrived: a QoS 2 delivery waits for PUBCOMP next (a repeated PUBREC changes nothing). Returns
        /// false when the delivery is QoS 1, which PUBREC does not answer.
        mutating func advanceToPubComp() -> Bool {
            switch state {
            case .awaitingPubAck:
                return false
            case .awaitingPubRec:
                state = .awaitingPubComp
                delivery.message.payload = ByteBuffer()
                return true
            case .awaitingPubComp:
                return true
            }
        }
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
        /// A QoS 0 message for a client whose connection has too much unwritten output (a slow consumer, see
        /// ``outputBlocked()``): dropped, counted in ``OutboundFlow/slowConsumerDroppedCount``.
        case droppedSlowConsumer
    }

    /// Maximum inflight QoS 1/2 messages; 0 means unlimited (bounded only by the 65535 packet identifiers).
    private(set) var maxInflight: Int
    /// `max_inflight_messages`, which an MQTT 5 client's Receive Maximum may lower for its connection.
    let configuredMaxInflight: Int
    /// Maximum queued messages; 0 means unlimited.
    let maxQueued: Int
    /// Maximum bytes (topic + payload) of queued messages; 0 means unlimited (mosquitto's `max_queued_bytes`).
    let maxQueuedBytes: Int
    /// Whether QoS 0 messages are queued while the client is offline.
    let queueQoS0WhileOffline: Bool

    /// Whether a connection is attached; offline flows queue instead of sending.
    private(set) var isOnline = false
    /// The inflight window by packet identifier.
    private(set) var inflight = PacketIDTable<InflightEntry>()
    /// Messages waiting for the window (or for the client to come back). An empty `Deque` holds no storage, so a
    /// session that never queues costs nothing here.
    private(set) var queue = Deque<QueuedMessage>()
    /// Messages dropped because the queue was full.
    private(set) var droppedCount = 0
    /// QoS 0 messages dropped because the connection's output was blocked.
    private(set) var slowConsumerDroppedCount = 0
    /// Topic and payload bytes of the queued messages (what ``maxQueuedBytes`` limits).
    private(set) var queuedBytes = 0
    /// How many queued messages are QoS 0: while none are, a full window means nothing can leave the queue, and
    /// draining need not look at the queue's head.
    private var queuedAtMostOnceCount = 0
    /// How many queued messages have an MQTT 5 expiry: while none do, ``dropExpired(now:)`` looks at nothing.
    private var expiringQueuedCount = 0
    /// Whether the connection has too much unwritten output: QoS 0 messages are dropped and QoS 1/2 messages
    /// stay queued (not written) until ``outputUnblocked()``.
    private(set) var isOutputBlocked = false
    private var nextPacketID: UInt16 = 1
    private var nextSequence: UInt64 = 0

    init(maxInflight: Int, maxQueued: Int, maxQueuedBytes: Int = 0, queueQoS0WhileOffline: Bool = false) {
        self.maxInflight = max(0, maxInflight)
        self.configuredMaxInflight = max(0, maxInflight)
        self.maxQueued = max(0, maxQueued)
        self.maxQueuedBytes = max(0, maxQueuedBytes)
        self.queueQoS0WhileOffline = queueQoS0WhileOffline
    }

    /// Keeps the window within the Receive Maximum of the client that attached (MQTT-3.3.4-9); nil restores the
    /// configured bound (a 3.1.1 client, or an MQTT 5 one that sent none).
    mutating func limitInflight(toReceiveMaximum receiveMaximum: Int?) {
        guard let receiveMaximum, receiveMaximum > 0 else {
            maxInflight = configuredMaxInflight
            return
        }
        maxInflight = configuredMaxInflight == 0 ? receiveMaximum : min(configuredMaxInflight, receiveMaximum)
    }

    /// The number of inflight messages.
    var inflightCount: Int { inflight.count }
    /// The number of queued messages.
    var queuedCount: Int { queue.count }

    /// Offers a message for delivery at `qos` (already reduced to the granted QoS).
    mutating func enqueue(_ message: BrokerMessage, qos: QoS, retain: Bool) -> EnqueueOutcome {
        if qos == .atMostOnce {
            if isOnline {
                if isOutputBlocked {
                    slowConsumerDroppedCount += 1
                    return .droppedSlowConsumer
                }
                return .send(OutboundDelivery(message: message, qos: qos, retain: retain, dup: false, packetID: nil))
            }
            guard queueQoS0WhileOffline else { return .discarded }
            return append(QueuedMessage(message: message, qos: qos, retain: retain))
        }
        if isOnline, !isOutputBlocked, queue.isEmpty, canStartInflight {
            return .send(startInflight(message, qos: qos, retain: retain))
        }
        return append(QueuedMessage(message: message, qos: qos, retain: retain))
    }

    /// The client acknowledged a PUBLISH: PUBACK and PUBCOMP complete a QoS 1 or 2 delivery and release queued
    /// messages into the window; PUBREC is answered with PUBREL, also for an unknown identifier, so a client that
    /// lost track can still finish its exchange. What to write is appended to `actions`: the broker passes one list
    /// it keeps, so an acknowledgement allocates no list of its own.
    @discardableResult
    mutating func acknowledged(
        _ acknowledgement: OutboundAcknowledgement, packetID: UInt16, into actions: inout [OutboundAction]
    ) -> AcknowledgementOutcome {
        switch acknowledgement {
        case .puback:
            return completeInflight(packetID: packetID, awaiting: .awaitingPubAck, into: &actions)
        case .pubrec:
            // In place: one lookup, and the entry is neither copied out nor back (a mutating call on the element).
            var fits = true
            let known = inflight.modifyValue(forKey: packetID) { fits = $0.advanceToPubComp() }
            guard fits else { return .wrongFlow }
            // An unknown id is still released, as mosquitto does: the client may have kept state the broker lost.
            actions.append(.pubrel(packetID))
            return known ? .accepted : .unknownPacketID
        case .pubcomp:
            return completeInflight(packetID: packetID, awaiting: .awaitingPubComp, into: &actions)
        }
    }

    /// PUBACK from the client (``acknowledged(_:packetID:into:)``), returning what to write.
    mutating func pubAckReceived(packetID: UInt16) -> [OutboundAction] {
        acknowledged(.puback, packetID: packetID)
    }

    /// PUBREC from the client (``acknowledged(_:packetID:into:)``), returning what to write.
    mutating func pubRecReceived(packetID: UInt16) -> [OutboundAction] {
        acknowledged(.pubrec, packetID: packetID)
    }

    /// PUBCOMP from the client (``acknowledged(_:packetID:into:)``), returning what to write.
    mutating func pubCompReceived(packetID: UInt16) -> [OutboundAction] {
        acknowledged(.pubcomp, packetID: packetID)
    }

    private mutating func acknowledged(_ acknowledgement: OutboundAcknowledgement, packetID: UInt16) -> [OutboundAction] {
        var actions: [OutboundAction] = []
        acknowledged(acknowledgement, packetID: packetID, into: &actions)
        return actions
    }

    /// Ends the delivery `packetID` when it is in `state`, then releases queued messages into the window.
    ///
    /// The entry is moved out of the window, not copied (reading its state through the dictionary would copy the
    /// whole delivery, retaining its topic and payload, on every acknowledgement). An acknowledgement in the wrong
    /// state (PUBACK for QoS 2, PUBCOMP for QoS 1 or before PUBREL) puts it back and is reported: the connection
    /// is closed for it, as mosquitto does.
    private mutating func completeInflight(
        packetID: UInt16, awaiting state: InflightState, into actions: inout [OutboundAction]
    ) -> AcknowledgementOutcome {
        guard let entry = inflight.removeValue(forKey: packetID) else { return .unknownPacketID }
        guard entry.state == state else {
            inflight[packetID] = entry
            return .wrongFlow
        }
        drainQueue(into: &actions)
        return .accepted
    }

    /// Drops the queued messages that have expired by `now` (MQTT-3.3.2-5): they are never sent. Returns how many.
    mutating func dropExpired(now: NIODeadline) -> Int {
        guard expiringQueuedCount > 0 else { return 0 }
        let before = queue.count
        let waiting = queue
        queue = Deque()
        queuedBytes = 0
        queuedAtMostOnceCount = 0
        expiringQueuedCount = 0
        for queued in waiting where !queued.message.hasExpired(at: now) {
            appendCounted(queued)
        }
        return before - queue.count
    }

    /// The client is (again) connected: re-send every unacknowledged PUBLISH with DUP set and every pending PUBREL,
    /// in their original order (MQTT-4.4.0-1), then release queued messages into the window.
    mutating func resume() -> [OutboundAction] {
        isOnline = true
        var actions: [OutboundAction] = []
        for (packetID, entry) in inflight.entries.sorted(by: { $0.value.sequence < $1.value.sequence }) {
            switch entry.state {
            case .awaitingPubAck, .awaitingPubRec:
                inflight.modifyValue(forKey: packetID) { $0.delivery.dup = true }
                var delivery = entry.delivery
                delivery.dup = true
                actions.append(.publish(delivery))
            case .awaitingPubComp:
                actions.append(.pubrel(packetID))
            }
        }
        drainQueue(into: &actions)
        return actions
    }

    /// The connection went away; keep the window and the queue for the next ``resume()``.
    mutating func suspend() {
        isOnline = false
        isOutputBlocked = false
    }

    /// The connection has too much unwritten output (see `PendingOutputGate`): from now on QoS 0 messages are
    /// dropped and QoS 1/2 messages wait in the queue, bounded by ``maxQueued`` and ``maxQueuedBytes``.
    mutating func outputBlocked() {
        isOutputBlocked = true
    }

    /// The connection's output drained: release queued messages into the window again.
    mutating func outputUnblocked() -> [OutboundAction] {
        guard isOutputBlocked else { return [] }
        isOutputBlocked = false
        var actions: [OutboundAction] = []
        drainQueue(into: &actions)
        return actions
    }

    // MARK: Watermarks (publisher back-pressure, see `PublisherBackpressure`)

    /// Whether the queue holds more than half of either limit: routing more into it should slow the publishers
    /// down. Always false without limits (nothing would ever be dropped).
    var isAboveHighWatermark: Bool {
        (maxQueued > 0 && queue.count > maxQueued / 2) || (maxQueuedBytes > 0 && queuedBytes > maxQueuedBytes / 2)
    }

    /// Whether the queue holds more than three quarters of either limit: a paused publisher's read batch in
    /// progress must stop too, or a large batch could take the queue to the limit and drop.
    var isAboveHaltWatermark: Bool {
        (maxQueued > 0 && queue.count > Self.threeQuarters(maxQueued))
            || (maxQueuedBytes > 0 && queuedBytes > Self.threeQuarters(maxQueuedBytes))
    }

    /// ⌊3n/4⌋ without overflow.
    private static func threeQuarters(_ n: Int) -> Int { n - (n + 3) / 4 }

    /// Whether the queue is down to a quarter of every limit: every paused publisher may resume.
    var isBelowLowWatermark: Bool {
        (maxQueued == 0 || queue.count <= maxQueued / 4) && (maxQueuedBytes == 0 || queuedBytes <= maxQueuedBytes / 4)
    }

    /// The bytes a queued message is charged for: topic plus payload, as mosquitto counts them.
    static func chargedBytes(_ message: BrokerMessage) -> Int {
        message.topic.utf8.count + message.payload.readableBytes
    }

    /// Queues a message unless either limit is reached: `max_queued_messages` counts messages, `max_queued_bytes`
    /// refuses a message that would take the queued bytes above it.
    private mutating func append(_ queued: consuming QueuedMessage) -> EnqueueOutcome {
        let bytes = Self.chargedBytes(queued.message)
        if (maxQueued > 0 && queue.count >= maxQueued) || (maxQueuedBytes > 0 && queuedBytes + bytes > maxQueuedBytes) {
            droppedCount += 1
            return .dropped
        }
        appendCounted(queued)
        return .queued
    }

    /// Appends to the queue and counts the message in ``queuedBytes`` and ``queuedAtMostOnceCount``.
    private mutating func appendCounted(_ queued: consuming QueuedMessage) {
        queuedBytes += Self.chargedBytes(queued.message)
        if queued.qos == .atMostOnce { queuedAtMostOnceCount += 1 }
        if queued.message.expiresAt != nil { expiringQueuedCount += 1 }
        queue.append(queued)
    }

    /// Removes the queue's head, uncounting it; the caller checked that the queue is not empty.
    private mutating func removeFirstCounted() -> (message: BrokerMessage, qos: QoS, retain: Bool) {
        let removed = queue.removeFirst()
        queuedBytes -= Self.chargedBytes(removed.message)
        if removed.qos == .atMostOnce { queuedAtMostOnceCount -= 1 }
        if removed.message.expiresAt != nil { expiringQueuedCount -= 1 }
        return (removed.message, removed.qos, removed.retain)
    }

    /// Moves queued messages into the window while it has room. Each message is moved out of the queue, not
    /// copied (this runs on every acknowledgement of a busy subscriber).
    private mutating func drainQueue(into actions: inout [OutboundAction]) {
        guard isOnline, !isOutputBlocked else { return }
        while !queue.isEmpty {
            // With a full window only a QoS 0 message can leave; the head is read only when one is queued.
            guard canStartInflight || (queuedAtMostOnceCount > 0 && queue.first?.qos == .atMostOnce) else { break }
            // Taken apart as it leaves the queue, so the message moves on instead of being copied out of it.
            let (message, qos, retain) = removeFirstCounted()
            if qos == .atMostOnce {
                actions.append(.publish(OutboundDelivery(message: message, qos: .atMostOnce, retain: retain, dup: false, packetID: nil)))
            } else {
                actions.append(.publish(startInflight(message, qos: qos, retain: retain)))
            }
        }
    }

    /// Whether one more message may go in flight: the window has room and a packet identifier is free.
    private var canStartInflight: Bool {
        (maxInflight == 0 || inflight.count < maxInflight) && inflight.count < Int(UInt16.max)
    }

    /// Puts a message in flight; the caller checked ``canStartInflight``.
    private mutating func startInflight(_ message: consuming BrokerMessage, qos: QoS, retain: Bool) -> OutboundDelivery {
        let packetID = allocatePacketID()
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
    /// identifiers still in flight. The caller checked that one is free (fewer than 65535 in flight), so the
    /// search ends.
    private mutating func allocatePacketID() -> UInt16 {
        while true {
            let candidate = nextPacketID
            nextPacketID = candidate == UInt16.max ? 1 : candidate + 1
            if !inflight.contains(candidate) { return candidate }  // no copy of an entry in flight
        }
    }
}

// Rebuilding a flow from persisted state (Persistence/BrokerStateSnapshot.swift).
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
            appendCounted(message)
        }
    }
}
