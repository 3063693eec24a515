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

    /// Who published a QoS 2 message and with which packet id.
    struct Origin: Sendable, Hashable {
        var clientID: String
        var packetID: UInt16
    }

    /// The message as the broker routes it.
    var brokerMessage: BrokerMessage {
        BrokerMessage(topic: topic, payload: payload, qos: qos, retain: retain, storeID: id)
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
    /// A persistent session unsubscribed.
    case unsubscribed(clientID: String, filter: String)
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
    /// The retained message of a topic; an empty payload deletes it.
    case retained(topic: String, qos: QoS, payload: ByteBuffer)
    /// Snapshot only: one delivery a session holds, in the session's order.
    case delivery(clientID: String, storeID: UInt64, qos: QoS, retain: Bool, packetID: UInt16, state: StoredDeliveryState)
    /// Snapshot only: the last record, with the number of records before it.
    case snapshotEnd(recordCount: UInt64)

    /// The type byte that starts the record body.
    enum Kind: UInt8 {
        case sessionCreated = 1, sessionRemoved, subscribed, unsubscribed, message, routed, outboundSent,
            outboundReleased, outboundCompleted, outboundAcked, inboundReceived, inboundReleased, retained, delivery,
            snapshotEnd
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
            buffer.writeInteger(flags)
            if let origin = message.origin {
                buffer.writeShortString(origin.clientID)
                buffer.writeInteger(origin.packetID)
            }
            buffer.writeShortString(message.topic)
            buffer.writeLongBytes(message.payload)
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
        case .retained(let topic, let qos, let payload):
            buffer.writeInteger(Kind.retained.rawValue)
            buffer.writeShortString(topic)
            buffer.writeInteger(qos.rawValue)
            buffer.writeLongBytes(payload)
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
}

// MARK: Decoding

/// Why a record body with a valid checksum could not be decoded.
enum RecordDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The type byte names no known record.
    case unknownType(UInt8)
    /// The body ends before a field.
    case shortBody(field: String)
    /// A field holds a value it can never hold (bad QoS, bad state, invalid UTF-8).
    case invalidField(String)
    /// Bytes remain after the last field.
    case trailingBytes(Int)

    var description: String {
        switch self {
        case .unknownType(let type): return "unknown record type \(type)"
        case .shortBody(let field): return "body ends before field '\(field)'"
        case .invalidField(let field): return "invalid value in field '\(field)'"
        case .trailingBytes(let count): return "\(count) unexpected bytes after the last field"
        }
    }
}

extension PersistentRecord {
    /// Decodes one record body (the bytes covered by the checksum). Consumes all of `body`.
    static func decode(body: inout ByteBuffer) throws(RecordDecodingError) -> PersistentRecord {
        let typeByte: UInt8 = try body.readField("type")
        guard let kind = Kind(rawValue: typeByte) else { throw .unknownType(typeByte) }
        let record: PersistentRecord
        switch kind {
        case .sessionCreated:
            record = .sessionCreated(clientID: try body.readShortString("clientID"))
        case .sessionRemoved:
            record = .sessionRemoved(clientID: try body.readShortString("clientID"))
        case .subscribed:
            record = .subscribed(
                clientID: try body.readShortString("clientID"), filter: try body.readShortString("filter"),
                qos: try body.readQoS("qos"))
        case .unsubscribed:
            record = .unsubscribed(clientID: try body.readShortString("clientID"), filter: try body.readShortString("filter"))
        case .message:
            let id: UInt64 = try body.readField("id")
            let flags: UInt8 = try body.readField("flags")
            guard flags & 0xE0 == 0, let qos = QoS(rawValue: flags & 0x03) else { throw .invalidField("flags") }
            var origin: StoredMessage.Origin?
            if flags & 0x10 != 0 {
                origin = StoredMessage.Origin(clientID: try body.readShortString("origin"), packetID: try body.readField("originPacketID"))
            }
            let topic = try body.readShortString("topic")
            let payload = try body.readLongBytes("payload")
            record = .message(
                StoredMessage(
                    id: id, topic: topic, qos: qos, retain: flags & 0x04 != 0, payload: payload,
                    mustRoute: flags & 0x08 != 0, origin: origin))
        case .routed:
            let storeID: UInt64 = try body.readField("storeID")
            let count: UInt32 = try body.readField("targetCount")
            // Each target takes at least 3 bytes: bound the count by the body before reserving anything.
            guard Int(count) <= body.readableBytes / 3 else { throw .invalidField("targetCount") }
            var targets: [RoutedTarget] = []
            targets.reserveCapacity(Int(count))
            for _ in 0..<count {
                let clientID = try body.readShortString("target")
                let flags: UInt8 = try body.readField("targetFlags")
                guard flags & 0xF8 == 0, let qos = QoS(rawValue: flags & 0x03) else { throw .invalidField("targetFlags") }
                targets.append(RoutedTarget(clientID: clientID, qos: qos, retain: flags & 0x04 != 0))
            }
            record = .routed(storeID: storeID, targets: targets)
        case .outboundSent:
            record = .outboundSent(
                clientID: try body.readShortString("clientID"), packetID: try body.readField("packetID"),
                storeID: try body.readField("storeID"))
        case .outboundReleased:
            record = .outboundReleased(clientID: try body.readShortString("clientID"), packetID: try body.readField("packetID"))
        case .outboundCompleted:
            record = .outboundCompleted(clientID: try body.readShortString("clientID"), packetID: try body.readField("packetID"))
        case .outboundAcked:
            record = .outboundAcked(clientID: try body.readShortString("clientID"), storeID: try body.readField("storeID"))
        case .inboundReceived:
            record = .inboundReceived(clientID: try body.readShortString("clientID"), packetID: try body.readField("packetID"))
        case .inboundReleased:
            record = .inboundReleased(clientID: try body.readShortString("clientID"), packetID: try body.readField("packetID"))
        case .retained:
            record = .retained(
                topic: try body.readShortString("topic"), qos: try body.readQoS("qos"),
                payload: try body.readLongBytes("payload"))
        case .delivery:
            let clientID = try body.readShortString("clientID")
            let storeID: UInt64 = try body.readField("storeID")
            let flags: UInt8 = try body.readField("flags")
            guard flags & 0xF8 == 0, let qos = QoS(rawValue: flags & 0x03) else { throw .invalidField("flags") }
            let packetID: UInt16 = try body.readField("packetID")
            let stateByte: UInt8 = try body.readField("state")
            guard let state = StoredDeliveryState(rawValue: stateByte) else { throw .invalidField("state") }
            record = .delivery(clientID: clientID, storeID: storeID, qos: qos, retain: flags & 0x04 != 0, packetID: packetID, state: state)
        case .snapshotEnd:
            record = .snapshotEnd(recordCount: try body.readField("recordCount"))
        }
        guard body.readableBytes == 0 else { throw .trailingBytes(body.readableBytes) }
        return record
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

    fileprivate mutating func readField<T: FixedWidthInteger>(_ name: String) throws(RecordDecodingError) -> T {
        guard let value = readInteger(as: T.self) else { throw .shortBody(field: name) }
        return value
    }

    fileprivate mutating func readQoS(_ name: String) throws(RecordDecodingError) -> QoS {
        let raw: UInt8 = try readField(name)
        guard let qos = QoS(rawValue: raw) else { throw .invalidField(name) }
        return qos
    }

    fileprivate mutating func readShortString(_ name: String) throws(RecordDecodingError) -> String {
        let length: UInt16 = try readField(name)
        guard let bytes = readSlice(length: Int(length)) else { throw .shortBody(field: name) }
        guard let string = bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes),
            string.utf8.elementsEqual(bytes.readableBytesView)
        else { throw .invalidField(name) }
        return string
    }

    fileprivate mutating func readLongBytes(_ name: String) throws(RecordDecodingError) -> ByteBuffer {
        let length: UInt32 = try readField(name)
        guard let bytes = readSlice(length: Int(length)) else { throw .shortBody(field: name) }
        return bytes
    }
}
