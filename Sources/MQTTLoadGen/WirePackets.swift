import MQTTCore
import NIOCore

/// Packets the generator writes, encoded with ``MQTTPacketEncoder`` once and copied (and patched) per use.
enum WirePackets {
    /// Encodes a packet the generator built itself; such packets are always encodable, so a failure is a
    /// programming error reported as a typed error all the same.
    static func encode(_ packet: MQTTPacket) throws(LoadGenError) -> ByteBuffer {
        var buffer = ByteBuffer()
        do {
            try MQTTPacketEncoder.encode(packet, into: &buffer)
        } catch {
            throw .invalidConfiguration("cannot encode \(packet.type): \(error)")
        }
        return buffer
    }

    /// CONNECT with a clean session, and the user name and password if there are any.
    static func connect(clientID: String, keepAliveSeconds: UInt16, login: Login) throws(LoadGenError) -> ByteBuffer {
        var packet = ConnectPacket(cleanSession: true, keepAliveSeconds: keepAliveSeconds, clientIdentifier: clientID)
        packet.username = login.username
        packet.password = login.password.map { Array($0.utf8) }
        return try encode(.connect(packet))
    }

    /// The user name and password every CONNECT of a run carries.
    struct Login: Sendable, Hashable {
        var username: String?
        var password: String?
    }

    /// SUBSCRIBE to one filter.
    static func subscribe(filter: String, qos: QoS) throws(LoadGenError) -> ByteBuffer {
        try encode(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: filter, qos: qos)])))
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
    /// Size of one packet.
    var size: Int { bytes.readableBytes }

    /// Encodes the template for `publisherIndex`.
    init(topic: String, qos: QoS, payloadSize: Int, publisherIndex: UInt32) throws(LoadGenError) {
        var payload = ByteBuffer()
        PayloadStamp(publisherIndex: publisherIndex, sequence: 0, sendTimeNanos: 0)
            .write(into: &payload, payloadSize: payloadSize)
        let packet = PublishPacket(
            topic: topic, payload: payload, qos: qos, packetID: qos == .atMostOnce ? nil : 1)
        bytes = try WirePackets.encode(.publish(packet))
        stampOffset = bytes.readableBytes - payload.readableBytes
        // The packet identifier sits right before the payload when QoS > 0.
        packetIDOffset = qos == .atMostOnce ? nil : stampOffset - 2
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
