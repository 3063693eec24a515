public import NIOCore

/// Decodes MQTT control packets from a byte stream (MQTT 3.1.1; MQTT 3.1 CONNECT too; MQTT 5.0 when created with
/// `acceptsVersion5`).
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

    /// Whether MQTT 5 is decoded. When false (the default, and what a server without MQTT 5 needs), a level-5
    /// CONNECT fails with ``MQTTCodecError/unsupportedProtocolLevel(_:)``, which maps to the 3.1.1 CONNACK 0x01
    /// such a server answers with (MQTT-3.1.2-2), and ``protocolVersion`` ``MQTTProtocolVersion/v5`` makes every
    /// other packet fail the same way.
    public let acceptsVersion5: Bool

    /// The protocol version used to decode packets other than CONNECT (which announces its own). The broker sets it
    /// after CONNECT. MQTT 3.1 and 3.1.1 share one wire format; ``MQTTProtocolVersion/v5`` selects the MQTT 5 forms
    /// if ``acceptsVersion5``.
    public var protocolVersion: MQTTProtocolVersion {
        didSet { decodesVersion5 = acceptsVersion5 && protocolVersion == .v5 }
    }

    /// `acceptsVersion5 && protocolVersion == .v5`, kept so that the fixed header check reads one stored flag.
    private var decodesVersion5 = false

    /// The topic of the last PUBLISH decoded, reused by the next one with the same bytes (see
    /// ``PublishPacket/decode(from:flags:previousTopic:)``).
    private var lastPublishTopic: String?

    /// Creates a decoder.
    /// - Parameters:
    ///   - maximumPacketSize: the largest remaining length to accept, clamped to ``protocolMaximumPacketSize``.
    ///   - acceptsVersion5: whether to decode MQTT 5 (see ``acceptsVersion5``); off by default.
    public init(maximumPacketSize: Int = MQTTPacketDecoder.protocolMaximumPacketSize, acceptsVersion5: Bool = false) {
        self.maximumPacketSize = min(maximumPacketSize, Self.protocolMaximumPacketSize)
        self.acceptsVersion5 = acceptsVersion5
        self.protocolVersion = .v3_1_1
    }

    /// Decodes one packet from the front of `buffer`.
    ///
    /// - Returns: the packet, having consumed exactly its bytes; or nil when `buffer` does not yet hold a whole
    ///   packet, in which case the reader index is unchanged.
    /// - Throws: the rule the bytes break. An oversized packet is rejected as soon as its remaining length is
    ///   readable, before its body arrives. An MQTT 5 AUTH packet fails with
    ///   ``MQTTCodecError/unexpectedAuthPacket``: use ``decodePacketOrAuth(from:)`` to receive it. The reader index
    ///   is unchanged on error.
    public mutating func decode(from buffer: inout ByteBuffer) throws(MQTTCodecError) -> MQTTPacket? {
        guard
            let header = try FixedHeader.peek(
                in: buffer, maximumRemainingLength: maximumPacketSize, version5: decodesVersion5),
            buffer.readableBytes >= header.packetSize
        else { return nil }
        let packet = try decodeBody(of: header, in: buffer)
        buffer.moveReaderIndex(forwardBy: header.packetSize)
        return packet
    }

    /// Decodes one packet like ``decode(from:)``, and also AUTH, which ``MQTTPacket`` has no case for yet.
    public mutating func decodePacketOrAuth(from buffer: inout ByteBuffer) throws(MQTTCodecError) -> MQTTDecodedPacket? {
        guard
            let header = try FixedHeader.peek(
                in: buffer, maximumRemainingLength: maximumPacketSize, version5: decodesVersion5),
            buffer.readableBytes >= header.packetSize
        else { return nil }
        let decoded: MQTTDecodedPacket
        if header.type == .auth {
            decoded = .auth(try header.decodeBody(in: buffer, with: AuthPacket.decode(from:)))
        } else {
            decoded = .packet(try decodeBody(of: header, in: buffer))
        }
        buffer.moveReaderIndex(forwardBy: header.packetSize)
        return decoded
    }

    /// Decodes the variable header and payload of a packet whose fixed header has been validated and whose bytes
    /// have all arrived. Acknowledgements are decoded from the identifier the header read with it; every other
    /// packet from a slice of its body.
    private mutating func decodeBody(
        of header: FixedHeader, in buffer: ByteBuffer
    ) throws(MQTTCodecError) -> MQTTPacket {
        if protocolVersion == .v5 { return try decodeBodyV5(of: header, in: buffer) }
        switch header.type {
        case .connect: return .connect(try decodeConnect(header, in: buffer))
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

    /// CONNECT announces its own version, whatever ``protocolVersion`` says.
    private func decodeConnect(_ header: FixedHeader, in buffer: ByteBuffer) throws(MQTTCodecError) -> ConnectPacket {
        let acceptsVersion5 = acceptsVersion5
        return try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
            try ConnectPacket.decode(from: &body, acceptsVersion5: acceptsVersion5)
        }
    }

    /// ``decodeBody(of:in:)`` for an MQTT 5 connection (MQTT 5.0 chapter 3).
    private mutating func decodeBodyV5(
        of header: FixedHeader, in buffer: ByteBuffer
    ) throws(MQTTCodecError) -> MQTTPacket {
        if header.type != .connect, !acceptsVersion5 { throw .unsupportedProtocolLevel(protocolVersion.rawValue) }
        // An acknowledgement of remaining length 2 is a success without properties: its identifier is all there is.
        let shortAcknowledgement = header.remainingLength == 2
        switch header.type {
        case .connect: return .connect(try decodeConnect(header, in: buffer))
        case .connack: return .connack(try header.decodeBody(in: buffer, with: ConnAckPacket.decodeV5(from:)))
        case .publish:
            let flags = header.flags
            let previousTopic = lastPublishTopic
            let publish = try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PublishPacket.decodeV5(from: &body, flags: flags, previousTopic: previousTopic)
            }
            if !publish.topic.isEmpty { lastPublishTopic = publish.topic }
            return .publish(publish)
        case .puback:
            if shortAcknowledgement { return .puback(try PubAckPacket.decode(identifier: header.bodyPrefix)) }
            return .puback(try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PubAckPacket.decodeV5(from: &body, type: .puback)
            })
        case .pubrec:
            if shortAcknowledgement { return .pubrec(try PubRecPacket.decode(identifier: header.bodyPrefix)) }
            return .pubrec(try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PubRecPacket.decodeV5(from: &body, type: .pubrec)
            })
        case .pubrel:
            if shortAcknowledgement { return .pubrel(try PubRelPacket.decode(identifier: header.bodyPrefix)) }
            return .pubrel(try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PubRelPacket.decodeV5(from: &body, type: .pubrel)
            })
        case .pubcomp:
            if shortAcknowledgement { return .pubcomp(try PubCompPacket.decode(identifier: header.bodyPrefix)) }
            return .pubcomp(try header.decodeBody(in: buffer) { (body) throws(MQTTCodecError) in
                try PubCompPacket.decodeV5(from: &body, type: .pubcomp)
            })
        case .subscribe: return .subscribe(try header.decodeBody(in: buffer, with: SubscribePacket.decodeV5(from:)))
        case .suback: return .suback(try header.decodeBody(in: buffer, with: SubAckPacket.decodeV5(from:)))
        case .unsubscribe:
            return .unsubscribe(try header.decodeBody(in: buffer, with: UnsubscribePacket.decodeV5(from:)))
        case .unsuback: return .unsuback(try header.decodeBody(in: buffer, with: UnsubAckPacket.decodeV5(from:)))
        case .pingreq: return .pingreq(try header.decodeBody(in: buffer, with: PingReqPacket.decode(from:)))
        case .pingresp: return .pingresp(try header.decodeBody(in: buffer, with: PingRespPacket.decode(from:)))
        case .disconnect: return .disconnect(try header.decodeBody(in: buffer, with: DisconnectPacket.decodeV5(from:)))
        case .auth: throw .unexpectedAuthPacket
        }
    }
}

/// What ``MQTTPacketDecoder/decodePacketOrAuth(from:)`` returns: any ``MQTTPacket``, or an MQTT 5 AUTH.
public enum MQTTDecodedPacket: Sendable, Hashable {
    /// A packet of any type but AUTH.
    case packet(MQTTPacket)
    /// An AUTH packet (MQTT 5 only).
    case auth(AuthPacket)
}
