import MQTTCore
import NIOCore

/// Where an outbound QoS 1/2 delivery to a persistent session stands, as stored.
enum StoredDeliveryState: UInt8, Sendable, Hashable {
    /// Waiting in the session's queue (or inflight at QoS 1, which is re-sent with a new packet id after a restart).
    case queued = 0
    /// QoS 2 PUBLISH sent with its packet id; waiting for PUBREC.
    case awaitingPubRec = 1
    /// PUBREC received, PUBREL sent; waiting for PUBCOMP.
    case awaitingPubComp = 2
}

/// An application message as stored: written once, referenced by id from every session that holds it.
struct StoredMessage: Sendable, Hashable {
    /// Unique among the messages alive in the store (``BrokerMessage/storeID``).
    var id: UInt64
    var topic: String
    var qos: QoS
    var retain: Bool
    var payload: ByteBuffer
    /// Accepted from a publisher but not routed yet when recorded: recovery routes it.
    var mustRoute: Bool
    /// The persistent publisher session and its inbound QoS 2 packet id, recorded with the message in one record so
    /// the message and "this id was received" become durable together.
    var origin: Origin?

    /// The MQTT 5 properties forwarded with the message (``BrokerMessage/properties``, less Subscription
    /// Identifiers, which belong to each delivery); empty for MQTT 3.1.1 messages. Format version 2.
    var properties: MQTTProperties = .none
    /// When the message expires, in wall-clock time (``BrokerMessage/expiresAt`` converted with
    /// ``PersistenceClock``); nil when it never does. Format version 2.
    var expiresAt: WallClockTime? = nil

    /// Who published a QoS 2 message and with which packet id.
    struct Origin: Sendable, Hashable {
        var clientID: String
        var packetID: UInt16
    }
}

extension StoredMessage {
    /// `message` as stored, its expiry converted to wall-clock time with `clock`.
    init(_ message: BrokerMessage, mustRoute: Bool, origin: Origin?, clock: PersistenceClock) {
        self.init(
            id: message.storeID, topic: message.topic, qos: message.qos, retain: message.retain, payload: message.payload,
            mustRoute: mustRoute, origin: origin, properties: message.properties.withoutSubscriptionIdentifiers,
            expiresAt: message.expiresAt.map { clock.wallTime(of: $0) })
    }

    /// The message as the broker routes it, its expiry converted back with `clock`.
    func brokerMessage(_ clock: PersistenceClock) -> BrokerMessage {
        BrokerMessage(
            topic: topic, payload: payload, qos: qos, retain: retain, storeID: id, properties: properties,
            expiresAt: expiresAt.map { clock.deadline(of: $0) })
    }
}

extension MQTTProperties {
    /// The list without Subscription Identifiers (they are added per delivery, not stored with the message).
    var withoutSubscriptionIdentifiers: MQTTProperties {
        guard entries.contains(where: { $0.identifier == .subscriptionIdentifier }) else { return self }
        return MQTTProperties(entries.filter { $0.identifier != .subscriptionIdentifier })
    }
}

/// One session a routed message was queued for.
struct RoutedTarget: Sendable, Hashable {
    var clientID: String
    var qos: QoS
    var retain: Bool
}

/// One record of the log or the snapshot. The log is a sequence of these changes; a snapshot is the same records
/// describing a whole state (plus ``delivery`` and ``snapshotEnd``, which only snapshots use).
enum PersistentRecord: Sendable, Hashable {
    /// A persistent session (clean session = false) was created.
    case sessionCreated(clientID: String)
    /// A persistent session was discarded (the client connected with clean session = true).
    case sessionRemoved(clientID: String)
    /// A persistent session subscribed (or re-subscribed) to a filter.
    case subscribed(clientID: String, filter: String, qos: QoS)
    /// Format version 2: the MQTT 5 options of a subscription (``SubscriptionOptions``), following its
    /// ``subscribed(clientID:filter:qos:)`` when they are not the defaults (a `subscribed` record resets them).
    case subscriptionOptions(clientID: String, filter: String, options: SubscriptionOptions)
    /// Format version 2: a persistent session's protocol level and Session Expiry Interval (after its
    /// ``sessionCreated(clientID:)``, when a client resumes it, and when DISCONNECT changes the interval). A session
    /// without one (version 1) is an MQTT 3.1.1 session.
    case sessionLifetime(clientID: String, protocolVersion: MQTTProtocolVersion, expiryInterval: UInt32)
    /// A persistent session unsubscribed.
    case unsubscribed(clientID: String, filter: String)
    /// Format version 3: the session's client went away and its will waits for its Will Delay Interval (MQTT 5.0
    /// 4.1: the will and its delay are part of the session state, so they outlive a restart as the session does).
    case delayedWill(clientID: String, will: StoredWill)
    /// Format version 3: the delayed will was published, or cancelled because the client came back.
    case delayedWillCleared(clientID: String)
    /// An application message (see ``StoredMessage``).
    case message(StoredMessage)
    /// The message was queued for these persistent sessions.
    case routed(storeID: UInt64, targets: [RoutedTarget])
    /// A QoS 2 message left the session's queue with this packet id (logged before the PUBLISH is written).
    case outboundSent(clientID: String, packetID: UInt16, storeID: UInt64)
    /// The client's PUBREC for an outbound QoS 2 message (logged before PUBREL is written).
    case outboundReleased(clientID: String, packetID: UInt16)
    /// PUBCOMP from the client completed an outbound QoS 2 message.
    case outboundCompleted(clientID: String, packetID: UInt16)
    /// PUBACK from the client completed an outbound QoS 1 message.
    case outboundAcked(clientID: String, storeID: UInt64)
    /// An inbound QoS 2 packet id awaiting PUBREL (messages that are not routed, and snapshots).
    case inboundReceived(clientID: String, packetID: UInt16)
    /// PUBREL released an inbound QoS 2 packet id (logged before PUBCOMP is written).
    case inboundReleased(clientID: String, packetID: UInt16)
    /// The retained message of a topic; an empty payload deletes it. `properties` and `expiresAt` (format version 2)
    /// as in ``StoredMessage``.
    case retained(topic: String, qos: QoS, payload: ByteBuffer, properties: MQTTProperties = .none, expiresAt: WallClockTime? = nil)
    /// Snapshot only: one delivery a session holds, in the session's order.
    case delivery(clientID: String, storeID: UInt64, qos: QoS, retain: Bool, packetID: UInt16, state: StoredDeliveryState)
    /// Snapshot only: the last record, with the number of records before it.
    case snapshotEnd(recordCount: UInt64)

    /// The type byte that starts the record body.
    enum Kind: UInt8 {
        case sessionCreated = 1, sessionRemoved, subscribed, unsubscribed, message, routed, outboundSent,
            outboundReleased, outboundCompleted, outboundAcked, inboundReceived, inboundReleased, retained, delivery,
            snapshotEnd,
            // Format version 2.
            subscriptionOptions, sessionLifetime,
            // Format version 3.
            delayedWill, delayedWillCleared

        /// The first format version that can hold this record type.
        var introducedIn: UInt16 {
            switch self {
            case .subscriptionOptions, .sessionLifetime: 2
            case .delayedWill, .delayedWillCleared: 3
            default: 1
            }
        }
    }

    /// Flag bits of version 2 in a `message` record's flags byte and a `retained` record's QoS byte: the MQTT 5
    /// fields that follow the payload, in this order.
    enum Version2Flags {
        /// An expiry follows: wall-clock milliseconds since 1970, Int64.
        static let expiry: UInt8 = 0x20
        /// A property block follows: an MQTT property length (variable byte integer) and the properties as in a
        /// PUBLISH.
        static let properties: UInt8 = 0x40
    }
}

// MARK: Encoding

extension PersistentRecord {
    /// Appends the record body (type byte and fields) to `buffer`.
    func encodeBody(into buffer: inout ByteBuffer) {
        switch self {
        case .sessionCreated(let clientID):
            buffer.writeInteger(Kind.sessionCreated.rawValue)
            buffer.writeShortString(clientID)
        case .sessionRemoved(let clientID):
            buffer.writeInteger(Kind.sessionRemoved.rawValue)
            buffer.writeShortString(clientID)
        case .subscribed(let clientID, let filter, let qos):
            buffer.writeInteger(Kind.subscribed.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeShortString(filter)
            buffer.writeInteger(qos.rawValue)
        case .unsubscribed(let clientID, let filter):
            buffer.writeInteger(Kind.unsubscribed.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeShortString(filter)
        case .message(let message):
            buffer.writeInteger(Kind.message.rawValue)
            buffer.writeInteger(message.id)
            var flags: UInt8 = message.qos.rawValue
            if message.retain { flags |= 0x04 }
            if message.mustRoute { flags |= 0x08 }
            if message.origin != nil { flags |= 0x10 }
            let properties = message.properties.storedBlock
            flags |= Self.version2Flags(expiresAt: message.expiresAt, properties: properties)
            buffer.writeInteger(flags)
            if let origin = message.origin {
                buffer.writeShortString(origin.clientID)
                buffer.writeInteger(origin.packetID)
            }
            buffer.writeShortString(message.topic)
            buffer.writeLongBytes(message.payload)
            buffer.writeVersion2Fields(expiresAt: message.expiresAt, properties: properties)
        case .routed(let storeID, let targets):
            buffer.writeInteger(Kind.routed.rawValue)
            buffer.writeInteger(storeID)
            buffer.writeInteger(UInt32(targets.count))
            for target in targets {
                buffer.writeShortString(target.clientID)
                buffer.writeInteger(target.qos.rawValue | (target.retain ? 0x04 : 0))
            }
        case .outboundSent(let clientID, let packetID, let storeID):
            buffer.writeInteger(Kind.outboundSent.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(packetID)
            buffer.writeInteger(storeID)
        case .outboundReleased(let clientID, let packetID):
            buffer.writeInteger(Kind.outboundReleased.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(packetID)
        case .outboundCompleted(let clientID, let packetID):
            buffer.writeInteger(Kind.outboundCompleted.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(packetID)
        case .outboundAcked(let clientID, let storeID):
            buffer.writeInteger(Kind.outboundAcked.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(storeID)
        case .inboundReceived(let clientID, let packetID):
            buffer.writeInteger(Kind.inboundReceived.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(packetID)
        case .inboundReleased(let clientID, let packetID):
            buffer.writeInteger(Kind.inboundReleased.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(packetID)
        case .retained(let topic, let qos, let payload, let properties, let expiresAt):
            buffer.writeInteger(Kind.retained.rawValue)
            buffer.writeShortString(topic)
            let block = properties.storedBlock
            buffer.writeInteger(qos.rawValue | Self.version2Flags(expiresAt: expiresAt, properties: block))
            buffer.writeLongBytes(payload)
            buffer.writeVersion2Fields(expiresAt: expiresAt, properties: block)
        case .subscriptionOptions(let clientID, let filter, let options):
            buffer.writeInteger(Kind.subscriptionOptions.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeShortString(filter)
            var flags: UInt8 = 0
            if options.noLocal { flags |= 0x01 }
            if options.retainAsPublished { flags |= 0x02 }
            let identifier = options.identifier.flatMap { UInt32(exactly: $0) }
            if identifier != nil { flags |= 0x04 }
            buffer.writeInteger(flags)
            if let identifier { buffer.writeInteger(identifier) }
        case .sessionLifetime(let clientID, let protocolVersion, let expiryInterval):
            buffer.writeInteger(Kind.sessionLifetime.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(protocolVersion.rawValue)
            buffer.writeInteger(expiryInterval)
        case .delayedWill(let clientID, let will):
            buffer.writeInteger(Kind.delayedWill.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(will.publishAt.milliseconds)
            let properties = will.properties.storedBlock
            var flags = will.qos.rawValue | (will.retain ? 0x04 : 0)
            flags |= Self.version2Flags(expiresAt: will.expiresAt, properties: properties)
            buffer.writeInteger(flags)
            buffer.writeShortString(will.topic)
            buffer.writeLongBytes(will.payload)
            buffer.writeVersion2Fields(expiresAt: will.expiresAt, properties: properties)
        case .delayedWillCleared(let clientID):
            buffer.writeInteger(Kind.delayedWillCleared.rawValue)
            buffer.writeShortString(clientID)
        case .delivery(let clientID, let storeID, let qos, let retain, let packetID, let state):
            buffer.writeInteger(Kind.delivery.rawValue)
            buffer.writeShortString(clientID)
            buffer.writeInteger(storeID)
            buffer.writeInteger(qos.rawValue | (retain ? 0x04 : 0))
            buffer.writeInteger(packetID)
            buffer.writeInteger(state.rawValue)
        case .snapshotEnd(let count):
            buffer.writeInteger(Kind.snapshotEnd.rawValue)
            buffer.writeInteger(count)
        }
    }

    /// The version-2 flag bits for a message's expiry and encoded properties.
    private static func version2Flags(expiresAt: WallClockTime?, properties: ByteBuffer?) -> UInt8 {
        (expiresAt == nil ? 0 : Version2Flags.expiry) | (properties == nil ? 0 : Version2Flags.properties)
    }
}

extension MQTTProperties {
    /// The list as a stored property block; nil when it is empty, or (never for properties the broker decoded from a
    /// PUBLISH) not valid in a PUBLISH, which is then stored without properties rather than in a file it could not
    /// read back.
    var storedBlock: ByteBuffer? {
        guard !entries.isEmpty else { return nil }
        var block = ByteBuffer()
        do {
            try encode(into: &block, context: .publish)
        } catch {
            return nil
        }
        return block
    }
}

extension ByteBuffer {
    /// A UTF-8 string with a 16-bit length prefix (client ids, topics and filters are at most 65535 bytes in MQTT).
    mutating func writeShortString(_ string: String) {
        let lengthIndex = writerIndex
        writeInteger(UInt16(0))
        let written = writeString(string)
        setInteger(UInt16(truncatingIfNeeded: written), at: lengthIndex)
    }

    /// Bytes with a 32-bit length prefix.
    mutating func writeLongBytes(_ bytes: ByteBuffer) {
        writeInteger(UInt32(truncatingIfNeeded: bytes.readableBytes))
        var copy = bytes
        writeBuffer(&copy)
    }

    /// The MQTT 5 fields after a message's payload (their flag bits say which are present).
    fileprivate mutating func writeVersion2Fields(expiresAt: WallClockTime?, properties: ByteBuffer?) {
        if let expiresAt { writeInteger(expiresAt.milliseconds) }
        if var properties { writeBuffer(&properties) }
    }
}
