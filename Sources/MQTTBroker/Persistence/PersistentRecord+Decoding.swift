import MQTTCore
import NIOCore

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
    /// Decodes one record body (the bytes covered by the checksum) of a file of format `version`. Consumes all of
    /// `body`. A version-1 file cannot hold the record types and flag bits of version 2: they are damage there.
    static func decode(body: inout ByteBuffer, version: UInt16 = PersistenceFileFormat.version) throws(RecordDecodingError)
        -> PersistentRecord
    {
        let typeByte: UInt8 = try body.readField("type")
        guard let kind = Kind(rawValue: typeByte), version >= kind.introducedIn else { throw .unknownType(typeByte) }
        // The flag bits a message's flags byte or a retained message's QoS byte may carry in this version.
        let version2Bits = version >= 2 ? Version2Flags.expiry | Version2Flags.properties : 0
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
            guard flags & 0xE0 & ~version2Bits == 0, let qos = QoS(rawValue: flags & 0x03) else { throw .invalidField("flags") }
            var origin: StoredMessage.Origin?
            if flags & 0x10 != 0 {
                origin = StoredMessage.Origin(clientID: try body.readShortString("origin"), packetID: try body.readField("originPacketID"))
            }
            let topic = try body.readShortString("topic")
            let payload = try body.readLongBytes("payload")
            let (expiresAt, properties) = try body.readVersion2Fields(flags: flags)
            record = .message(
                StoredMessage(
                    id: id, topic: topic, qos: qos, retain: flags & 0x04 != 0, payload: payload,
                    mustRoute: flags & 0x08 != 0, origin: origin, properties: properties, expiresAt: expiresAt))
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
            let topic = try body.readShortString("topic")
            let qosByte: UInt8 = try body.readField("qos")
            guard qosByte & ~(0x03 | version2Bits) == 0, let qos = QoS(rawValue: qosByte & 0x03) else {
                throw .invalidField("qos")
            }
            let payload = try body.readLongBytes("payload")
            let (expiresAt, properties) = try body.readVersion2Fields(flags: qosByte)
            record = .retained(topic: topic, qos: qos, payload: payload, properties: properties, expiresAt: expiresAt)
        case .subscriptionOptions:
            let clientID = try body.readShortString("clientID")
            let filter = try body.readShortString("filter")
            let flags: UInt8 = try body.readField("optionFlags")
            guard flags & 0xF8 == 0 else { throw .invalidField("optionFlags") }
            var options = SubscriptionOptions(noLocal: flags & 0x01 != 0, retainAsPublished: flags & 0x02 != 0)
            if flags & 0x04 != 0 {
                let identifier: UInt32 = try body.readField("identifier")
                // A Subscription Identifier is 1 to 268,435,455 (MQTT 5.0 3.8.2.1.2).
                guard (1...268_435_455).contains(identifier) else { throw .invalidField("identifier") }
                options.identifier = Int(identifier)
            }
            record = .subscriptionOptions(clientID: clientID, filter: filter, options: options)
        case .sessionLifetime:
            let clientID = try body.readShortString("clientID")
            let versionByte: UInt8 = try body.readField("protocolVersion")
            guard let protocolVersion = MQTTProtocolVersion(rawValue: versionByte) else { throw .invalidField("protocolVersion") }
            record = .sessionLifetime(clientID: clientID, protocolVersion: protocolVersion, expiryInterval: try body.readField("expiryInterval"))
        case .delayedWill:
            let clientID = try body.readShortString("clientID")
            let publishAt = WallClockTime(milliseconds: try body.readField("publishAt"))
            let flags: UInt8 = try body.readField("willFlags")
            guard flags & 0x98 == 0, let qos = QoS(rawValue: flags & 0x03) else { throw .invalidField("willFlags") }
            let topic = try body.readShortString("topic")
            let payload = try body.readLongBytes("payload")
            let (expiresAt, properties) = try body.readVersion2Fields(flags: flags)
            let will = StoredWill(
                topic: topic, qos: qos, retain: flags & 0x04 != 0, payload: payload, properties: properties,
                expiresAt: expiresAt, publishAt: publishAt)
            record = .delayedWill(clientID: clientID, will: will)
        case .delayedWillCleared:
            record = .delayedWillCleared(clientID: try body.readShortString("clientID"))
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

    /// The MQTT 5 fields after a message's payload, as its version-2 flag bits announce them.
    fileprivate mutating func readVersion2Fields(flags: UInt8) throws(RecordDecodingError)
        -> (expiresAt: WallClockTime?, properties: MQTTProperties)
    {
        var expiresAt: WallClockTime?
        if flags & PersistentRecord.Version2Flags.expiry != 0 {
            expiresAt = WallClockTime(milliseconds: try readField("expiresAt"))
        }
        var properties = MQTTProperties.none
        if flags & PersistentRecord.Version2Flags.properties != 0 {
            guard readableBytes > 0 else { throw .shortBody(field: "properties") }
            do {
                properties = try MQTTProperties(decodingBlockFrom: &self, context: .publish)
            } catch {
                throw .invalidField("properties (\(error))")
            }
        }
        return (expiresAt, properties)
    }

    fileprivate mutating func readLongBytes(_ name: String) throws(RecordDecodingError) -> ByteBuffer {
        let length: UInt32 = try readField(name)
        guard let bytes = readSlice(length: Int(length)) else { throw .shortBody(field: name) }
        return bytes
    }
}
