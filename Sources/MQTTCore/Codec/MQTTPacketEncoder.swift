public import NIOCore

/// Encodes MQTT control packets (MQTT 3.1.1; MQTT 3.1 CONNECT too; MQTT 5.0).
///
/// Each packet's remaining length is computed first, then the fixed header and the fields are written straight
/// into the caller's buffer: no temporary buffers, one capacity reservation per packet.
///
/// MQTT 5-only fields of the model (properties, reason codes other than success) are not written in 3.1.1; in MQTT 5
/// the shortest form the spec allows is written (an acknowledgement of success without properties is four bytes).
/// For a QoS 0 PUBLISH the DUP flag and any packet identifier are left out, as MQTT-3.3.1-2 and MQTT-2.3.1-5
/// require. Topic names and filters are not re-validated here (the broker only forwards validated ones); use
/// ``MQTTTopic`` for user input.
public enum MQTTPacketEncoder {
    /// Appends the wire form of `packet` to `buffer`.
    ///
    /// - Parameter protocolVersion: the version negotiated on the connection; CONNECT uses its own
    ///   ``ConnectPacket/protocolVersion``.
    /// - Throws: ``MQTTCodecError`` for packets that cannot be encoded: a string or binary field over 65,535 bytes,
    ///   a QoS 1 or 2 PUBLISH without packet identifier, a zero packet identifier, an empty SUBSCRIBE, UNSUBSCRIBE or
    ///   SUBACK list, a remaining length over 268,435,455; in MQTT 5 also a property the packet type does not allow
    ///   or repeats, a property value or reason code the spec forbids. `buffer` is unchanged on error.
    public static func encode(
        _ packet: MQTTPacket,
        protocolVersion: MQTTProtocolVersion = .v3_1_1,
        into buffer: inout ByteBuffer
    ) throws(MQTTCodecError) {
        if protocolVersion == .v5 { return try encodeV5(packet, into: &buffer) }
        switch packet {
        case .connect(let connect): try write(connect, into: &buffer)
        case .connack(let connack): try write(connack, into: &buffer)
        case .publish(let publish): try write(publish, into: &buffer)
        case .puback(let puback): try writeIdentifierOnly(puback, into: &buffer)
        case .pubrec(let pubrec): try writeIdentifierOnly(pubrec, into: &buffer)
        case .pubrel(let pubrel): try writeIdentifierOnly(pubrel, into: &buffer)
        case .pubcomp(let pubcomp): try writeIdentifierOnly(pubcomp, into: &buffer)
        case .subscribe(let subscribe): try write(subscribe, into: &buffer)
        case .suback(let suback): try write(suback, into: &buffer)
        case .unsubscribe(let unsubscribe): try write(unsubscribe, into: &buffer)
        case .unsuback(let unsuback): try write(unsuback, into: &buffer)
        case .pingreq(let pingreq): try write(pingreq, into: &buffer)
        case .pingresp(let pingresp): try write(pingresp, into: &buffer)
        case .disconnect(let disconnect): try write(disconnect, into: &buffer)
        }
    }

    /// Writes the fixed header, then the body, after validating and sizing the body.
    private static func write(_ packet: some MQTTPacketBodyEncodable, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        let remainingLength = try packet.remainingLength()
        try writeHeader(
            firstByte: packet.packetType.rawValue << 4 | packet.fixedHeaderFlags, remainingLength: remainingLength,
            into: &buffer)
        packet.encodeBody(into: &buffer)
    }

    /// Checks the remaining length, reserves room for the whole packet and writes its fixed header. Always inlined:
    /// every 3.1.1 packet but the acknowledgements goes through it, and it was part of `write` before MQTT 5 needed it.
    @inline(__always)
    static func writeHeader(firstByte: UInt8, remainingLength: Int, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        guard remainingLength <= MQTTPacketDecoder.protocolMaximumPacketSize else {
            throw .packetTooLarge(size: remainingLength, maximum: MQTTPacketDecoder.protocolMaximumPacketSize)
        }
        buffer.reserveCapacity(
            minimumWritableBytes: 1 + MQTTWireSize.variableByteInteger(remainingLength) + remainingLength)
        buffer.writeMQTTFixedHeader(firstByte: firstByte, remainingLength: remainingLength)
    }
}

/// PUBACK, PUBREC, PUBREL and PUBCOMP: a fixed header with remaining length 2, then the packet identifier (in
/// MQTT 5 optionally followed by a reason code and properties).
protocol MQTTIdentifierOnlyPacket {
    /// The packet type written in the fixed header.
    var packetType: PacketType { get }
    /// The packet identifier, the packet's whole body in 3.1.1.
    var packetID: UInt16 { get }
    /// The MQTT 5 reason code.
    var reasonCode: MQTTReasonCode { get }
    /// The MQTT 5 properties.
    var properties: MQTTProperties { get }
    /// Creates the packet.
    init(packetID: UInt16, reasonCode: MQTTReasonCode, properties: MQTTProperties)
}

extension MQTTIdentifierOnlyPacket {
    /// Decodes the packet from the identifier its fixed header read with it (``FixedHeader/bodyPrefix``); the
    /// header has already checked that the remaining length is 2.
    /// - Throws: ``MQTTCodecError/zeroPacketIdentifier`` for identifier 0 (MQTT-2.3.1-1).
    static func decode(identifier: UInt16?) throws(MQTTCodecError) -> Self {
        guard let identifier else { throw .unexpectedEndOfPacket }
        guard identifier != 0 else { throw .zeroPacketIdentifier }
        return Self(packetID: identifier, reasonCode: .success, properties: .none)
    }
}

extension MQTTPacketEncoder {
    /// Writes an identifier-only packet's four bytes in one store. A broker writes one of them for nearly every
    /// packet it receives, and the general path (size, reserve, then header and body apart) took three buffer
    /// writes for four bytes.
    private static func writeIdentifierOnly(_ packet: some MQTTIdentifierOnlyPacket, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        try writeIdentifierOnly(type: packet.packetType, packetID: packet.packetID, into: &buffer)
    }

    private static func writeIdentifierOnly(type: PacketType, packetID: UInt16, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        let packetID = try validatedForEncoding(packetID: packetID)
        let firstByte = type.rawValue << 4 | FixedHeader.requiredFlags(of: type)
        let packet = UInt32(firstByte) << 24 | 2 << 16 | UInt32(packetID)
        // One store through the buffer's pointer: `writeInteger` goes through the general `setBytes` path, which
        // costs far more than four bytes are worth, and the broker writes one acknowledgement for nearly every packet.
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 4) { bytes in
            bytes.storeBytes(of: packet.bigEndian, toByteOffset: 0, as: UInt32.self)
            return 4
        }
    }

    /// Appends an acknowledgement to `buffer`: the same bytes ``encode(_:protocolVersion:into:)`` writes for the
    /// PUBACK, PUBREC, PUBREL or PUBCOMP with that identifier, without a packet to build. Four bytes for success; an
    /// MQTT 5 reason code other than success adds its byte (remaining length 3, no properties, MQTT 5.0 3.4.2.2).
    /// - Throws: ``MQTTCodecError/zeroPacketIdentifier`` for identifier 0; `buffer` is then unchanged.
    public static func encode(_ acknowledgement: MQTTAcknowledgement, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        let type = acknowledgement.kind.packetType
        guard acknowledgement.reasonCode != .success else {
            return try writeIdentifierOnly(type: type, packetID: acknowledgement.packetID, into: &buffer)
        }
        let packetID = try validatedForEncoding(packetID: acknowledgement.packetID)
        buffer.writeInteger(type.rawValue << 4 | FixedHeader.requiredFlags(of: type))
        buffer.writeInteger(UInt8(3))
        buffer.writeInteger(packetID)
        buffer.writeInteger(acknowledgement.reasonCode.rawValue)
    }
}

/// What the encoder needs from each packet type but the identifier-only ones; their `+Codec.swift` files conform.
protocol MQTTPacketBodyEncodable {
    /// The packet type written in the fixed header.
    var packetType: PacketType { get }
    /// The low nibble of the fixed header's first byte.
    var fixedHeaderFlags: UInt8 { get }
    /// Validates the packet for encoding and returns its remaining length (variable header plus payload).
    func remainingLength() throws(MQTTCodecError) -> Int
    /// Writes the variable header and payload; only called after ``remainingLength()`` succeeded.
    func encodeBody(into buffer: inout ByteBuffer)
}

extension MQTTPacketBodyEncodable {
    /// Most packet types have fixed flags (MQTT 3.1.1 table 2.2).
    var fixedHeaderFlags: UInt8 { FixedHeader.requiredFlags(of: packetType) }
}

/// Checks a packet identifier for encoding (MQTT-2.3.1-1).
func validatedForEncoding(packetID: UInt16) throws(MQTTCodecError) -> UInt16 {
    guard packetID != 0 else { throw .zeroPacketIdentifier }
    return packetID
}
