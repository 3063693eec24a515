import MQTTCore
import NIOCore

/// Packets the generator writes, encoded with ``MQTTPacketEncoder`` once and copied (and patched) per use.
enum WirePackets {
    /// Encodes a packet the generator built itself at `protocolVersion`; such packets are always encodable, so a
    /// failure is a programming error reported as a typed error all the same.
    static func encode(
        _ packet: MQTTPacket, protocolVersion: MQTTProtocolVersion = .v3_1_1
    ) throws(LoadGenError) -> ByteBuffer {
        var buffer = ByteBuffer()
        do {
            try MQTTPacketEncoder.encode(packet, protocolVersion: protocolVersion, into: &buffer)
        } catch {
            throw .invalidConfiguration("cannot encode \(packet.type): \(error)")
        }
        return buffer
    }

    /// CONNECT at `protocolVersion` with a clean session (MQTT 5: clean start, session expiry 0), and the user name
    /// and password if there are any.
    static func connect(
        clientID: String, keepAliveSeconds: UInt16, login: Login, protocolVersion: MQTTProtocolVersion = .v3_1_1
    ) throws(LoadGenError) -> ByteBuffer {
        var packet = ConnectPacket(
            protocolVersion: protocolVersion, cleanSession: true, keepAliveSeconds: keepAliveSeconds,
            clientIdentifier: clientID)
        packet.username = login.username
        packet.password = login.password.map { Array($0.utf8) }
        return try encode(.connect(packet), protocolVersion: protocolVersion)
    }

    /// The user name and password every CONNECT of a run carries.
    struct Login: Sendable, Hashable {
        var username: String?
        var password: String?
    }

    /// SUBSCRIBE to one filter (MQTT 5: with an empty property block and default subscription options).
    static func subscribe(
        filter: String, qos: QoS, protocolVersion: MQTTProtocolVersion = .v3_1_1
    ) throws(LoadGenError) -> ByteBuffer {
        try encode(
            .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: filter, qos: qos)])),
            protocolVersion: protocolVersion)
    }

    /// PINGREQ (2 bytes).
    static let pingRequest = ByteBuffer(bytes: [PacketType.pingreq.rawValue << 4, 0])
    /// DISCONNECT (2 bytes).
    static let disconnect = ByteBuffer(bytes: [PacketType.disconnect.rawValue << 4, 0])

    /// Appends a 4-byte acknowledgement (PUBACK, PUBREC, PUBREL or PUBCOMP) for `packetID`.
    static func writeAcknowledgement(_ type: PacketType, packetID: UInt16, into buffer: inout ByteBuffer) {
        let flags: UInt8 = type == .pubrel ? 0b0010 : 0
        buffer.writeInteger(UInt32(type.rawValue << 4 | flags) << 24 | 2 << 16 | UInt32(packetID))
    }

    /// Appends an acknowledgement to `buffer`, allocating it on first use (acknowledgements of one read are
    /// written together).
    static func appendAcknowledgement(
        _ type: PacketType, packetID: UInt16, to buffer: inout ByteBuffer?, allocator: ByteBufferAllocator
    ) {
        var target = buffer ?? allocator.buffer(capacity: 512)
        buffer = nil
        writeAcknowledgement(type, packetID: packetID, into: &target)
        buffer = target
    }
}

/// A PUBLISH encoded once; each message is a copy with the packet identifier, sequence number and send time
/// patched in place.
struct PublishTemplate {
    /// The encoded packet with packet identifier 1 (QoS > 0), sequence 0 and send time 0.
    private let bytes: ByteBuffer
    /// Offset of the packet identifier inside the packet (QoS > 0 only).
    private let packetIDOffset: Int?
    /// Offset of the payload stamp inside the packet.
    private let stampOffset: Int
    /// Size of one packet: the bytes it takes on the wire.
    var size: Int { bytes.readableBytes }

    /// Encodes the template for `publisherIndex` at `protocolVersion`. In MQTT 5 `properties` (none, or a Topic
    /// Alias) follow the packet identifier; `topic` may then be empty when `properties` carry a Topic Alias.
    init(
        topic: String, qos: QoS, payloadSize: Int, publisherIndex: UInt32,
        protocolVersion: MQTTProtocolVersion = .v3_1_1, properties: MQTTProperties = .none
    ) throws(LoadGenError) {
        var payload = ByteBuffer()
        PayloadStamp(publisherIndex: publisherIndex, sequence: 0, sendTimeNanos: 0)
            .write(into: &payload, payloadSize: payloadSize)
        let packet = PublishPacket(
            topic: topic, payload: payload, qos: qos, packetID: qos == .atMostOnce ? nil : 1,
            properties: protocolVersion == .v5 ? properties : .none)
        bytes = try WirePackets.encode(.publish(packet), protocolVersion: protocolVersion)
        // The payload is the packet's tail.
        stampOffset = bytes.readableBytes - payload.readableBytes
        // The packet identifier follows the topic (fixed header, 2-byte length, topic bytes); in MQTT 5 the property
        // block comes after it, so it is not simply right before the payload.
        guard qos != .atMostOnce else {
            packetIDOffset = nil
            return
        }
        guard let length = try? bytes.getMQTTVariableByteInteger(at: bytes.readerIndex + 1) else {
            throw .invalidConfiguration("encoded PUBLISH template without a readable remaining length")
        }
        let lengthBytes = length.byteCount
        packetIDOffset = 1 + lengthBytes + 2 + topic.utf8.count
    }

    /// Appends one message.
    func write(into buffer: inout ByteBuffer, packetID: UInt16, sequence: UInt32, sendTimeNanos: UInt64) {
        let start = buffer.writerIndex
        buffer.writeImmutableBuffer(bytes)
        if let packetIDOffset { buffer.setInteger(packetID, at: start + packetIDOffset) }
        buffer.setInteger(sequence, at: start + stampOffset + PayloadStamp.sequenceOffset)
        buffer.setInteger(sendTimeNanos, at: start + stampOffset + PayloadStamp.sendTimeOffset)
    }
}

/// The PUBLISH templates of one publisher: one for every message, and with topic aliases a first one that carries
/// the topic and sets the alias, after which every message carries only the alias.
struct PublishTemplates {
    /// The first message's template when it differs from the rest (topic aliases); nil otherwise.
    let first: PublishTemplate?
    /// Every (other) message's template.
    let steady: PublishTemplate
    /// What one PUBLISH with the topic name takes on the wire without an alias (the baseline aliases are measured
    /// against).
    let withTopicSize: Int

    /// The Topic Alias every publisher uses.
    static let alias: UInt16 = 1

    /// Encodes the templates of one publisher.
    init(
        topic: String, qos: QoS, payloadSize: Int, publisherIndex: UInt32, protocolVersion: MQTTProtocolVersion,
        topicAlias: Bool
    ) throws(LoadGenError) {
        let plain = try PublishTemplate(
            topic: topic, qos: qos, payloadSize: payloadSize, publisherIndex: publisherIndex,
            protocolVersion: protocolVersion)
        withTopicSize = plain.size
        guard topicAlias else {
            first = nil
            steady = plain
            return
        }
        let aliased = MQTTProperties([.topicAlias(Self.alias)])
        first = try PublishTemplate(
            topic: topic, qos: qos, payloadSize: payloadSize, publisherIndex: publisherIndex,
            protocolVersion: protocolVersion, properties: aliased)
        steady = try PublishTemplate(
            topic: "", qos: qos, payloadSize: payloadSize, publisherIndex: publisherIndex,
            protocolVersion: protocolVersion, properties: aliased)
    }

    /// The template of message number `sent` (0-based).
    @inline(__always)
    func template(forMessage sent: Int) -> PublishTemplate {
        if sent == 0, let first { return first }
        return steady
    }

    /// The largest packet, for sizing a batch's buffer.
    var maximumSize: Int { max(first?.size ?? 0, steady.size) }
}
