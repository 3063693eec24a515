public import NIOCore

/// Decodes MQTT control packets from a byte stream (MQTT 3.1.1; MQTT 3.1 CONNECT too).
///
/// A value type without I/O: feed it whatever bytes have arrived and call ``decode(from:)`` until it returns nil.
/// ``MQTTPacketDecoderHandler`` wraps it for a NIO pipeline.
public struct MQTTPacketDecoder: Sendable {
    /// 268,435,455: the largest remaining length the four-byte variable byte integer can express.
    public static let protocolMaximumPacketSize = 268_435_455

    /// The largest remaining length (variable header plus payload, not counting the 2 to 5 byte fixed header)
    /// accepted; larger packets fail with ``MQTTCodecError/packetTooLarge(size:maximum:)`` as soon as their fixed
    /// header is read.
    public var maximumPacketSize: Int

    /// The protocol version used to decode packets other than CONNECT (which announces its own). The broker sets it
    /// after CONNECT. MQTT 3.1 and 3.1.1 share one wire format; ``MQTTProtocolVersion/v5`` is not supported yet and
    /// makes every non-CONNECT packet fail with ``MQTTCodecError/unsupportedProtocolLevel(_:)``.
    public var protocolVersion: MQTTProtocolVersion

    /// The topic of the last PUBLISH decoded, reused by the next one with the same bytes (see
    /// ``PublishPacket/decode(from:flags:previousTopic:)``).
    private var lastPublishTopic: String?

    /// Creates a decoder.
    /// - Parameter maximumPacketSize: the largest remaining length to accept, clamped to
    ///   ``protocolMaximumPacketSize``.
    public init(maximumPacketSize: Int = MQTTPacketDecoder.protocolMaximumPacketSize) {
        self.maximumPacketSize = min(maximumPacketSize, Self.protocolMaximumPacketSize)
        self.protocolVersion = .v3_1_1
    }

    /// Decodes one packet from the front of `buffer`.
    ///
    /// - Returns: the packet, having consumed exactly its bytes; or nil when `buffer` does not yet hold a whole
    ///   packet, in which case the reader index is unchanged.
    /// - Throws: the rule the bytes break. An oversized packet is rejected as soon as its remaining length is
    ///   readable, before its body arrives. The reader index is unchanged on error.
    public mutating func decode(from buffer: inout ByteBuffer) throws(MQTTCodecError) -> MQTTPacket? {
        guard let header = try FixedHeader.peek(in: buffer, maximumRemainingLength: maximumPacketSize),
            buffer.readableBytes >= header.packetSize
        else { return nil }
        let packet = try decodeBody(of: header, in: buffer)
        buffer.moveReaderIndex(forwardBy: header.packetSize)
        return packet
    }

    /// Decodes the variable header and payload of a packet whose fixed header has been validated and whose bytes
    /// have all arrived. Acknowledgements are decoded from the identifier the header read with it; every other
    /// packet from a slice of its body.
    private mutating func decodeBody(
        of header: FixedHeader, in buffer: ByteBuffer
    ) throws(MQTTCodecError) -> MQTTPacket {
        if header.type != .connect, protocolVersion == .v5 {
            throw .unsupportedProtocolLevel(protocolVersion.rawValue)
        }
        switch header.type {
        case .connect: return .connect(try header.decodeBody(in: buffer, with: ConnectPacket.decode(from:)))
        case .connack: return .connack(try header.decodeBody(in: buffer, with: ConnAckPacket.decode(from:)))
        case .publish:
            let flags = header.flags
            let previousTopic = lastPublishTopic
            let publish = try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PublishPacket.decode(from: &body, flags: flags, previousTopic: previousTopic)
            }
            lastPublishTopic = publish.topic
            return .publish(publish)
        case .puback: return .puback(try PubAckPacket.decode(identifier: header.bodyPrefix))
        case .pubrec: return .pubrec(try PubRecPacket.decode(identifier: header.bodyPrefix))
        case .pubrel: return .pubrel(try PubRelPacket.decode(identifier: header.bodyPrefix))
        case .pubcomp: return .pubcomp(try PubCompPacket.decode(identifier: header.bodyPrefix))
        case .subscribe: return .subscribe(try header.decodeBody(in: buffer, with: SubscribePacket.decode(from:)))
        case .suback: return .suback(try header.decodeBody(in: buffer, with: SubAckPacket.decode(from:)))
        case .unsubscribe: return .unsubscribe(try header.decodeBody(in: buffer, with: UnsubscribePacket.decode(from:)))
        case .unsuback: return .unsuback(try header.decodeBody(in: buffer, with: UnsubAckPacket.decode(from:)))
        case .pingreq: return .pingreq(try header.decodeBody(in: buffer, with: PingReqPacket.decode(from:)))
        case .pingresp: return .pingresp(try header.decodeBody(in: buffer, with: PingRespPacket.decode(from:)))
        case .disconnect: return .disconnect(try header.decodeBody(in: buffer, with: DisconnectPacket.decode(from:)))
        case .auth: throw .reservedPacketType(PacketType.auth.rawValue)  // FixedHeader.peek already rejects it.
        }
    }
}
