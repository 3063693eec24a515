import NIOCore

/// The fixed header every MQTT control packet starts with (MQTT 3.1.1 section 2.2).
struct FixedHeader: Sendable, Hashable {
    /// The packet type from the high nibble of the first byte.
    var type: PacketType
    /// The low nibble of the first byte (already validated for `type`).
    var flags: UInt8
    /// The number of bytes after the fixed header (variable header plus payload).
    var remainingLength: Int
    /// The size of the fixed header itself: the first byte plus 1 to 4 remaining length bytes.
    var byteCount: Int

    /// The first two bytes of the body, big-endian, when the body has two and they have arrived: the packet
    /// identifier of an acknowledgement, read in the same access to the bytes as the header so that an
    /// acknowledgement needs no slice of its own.
    var bodyPrefix: UInt16?

    /// The size of the whole packet.
    var packetSize: Int { byteCount + remainingLength }

    /// Parses and validates the fixed header at the buffer's reader index without moving it.
    ///
    /// Type, flags and remaining length are each checked as soon as their bytes are present, so a bad first byte
    /// or an oversized length is rejected before the rest of the packet arrives. The bytes are read in one access
    /// to the buffer's storage: each `getInteger` is a checked access of its own, and most packets a broker reads
    /// are four-byte acknowledgements.
    ///
    /// - Parameter version5: whether MQTT 5 rules apply: AUTH exists, and only PINGREQ and PINGRESP have a fixed
    ///   remaining length.
    /// - Returns: nil when the buffer ends inside the fixed header.
    static func peek(
        in buffer: ByteBuffer, maximumRemainingLength: Int, version5: Bool = false
    ) throws(MQTTCodecError) -> FixedHeader? {
        try buffer.withUnsafeReadableBytes { (bytes) throws(MQTTCodecError) -> FixedHeader? in
            try peek(in: bytes, maximumRemainingLength: maximumRemainingLength, version5: version5)
        }
    }

    /// ``peek(in:maximumRemainingLength:version5:)`` on the readable bytes themselves.
    private static func peek(
        in bytes: UnsafeRawBufferPointer, maximumRemainingLength: Int, version5: Bool
    ) throws(MQTTCodecError) -> FixedHeader? {
        guard let first = bytes.first else { return nil }
        let flags = first & 0x0F
        let type = try validatedType(first >> 4, version5: version5)
        try validate(flags: flags, for: type)
        guard let (remainingLength, lengthByteCount) = try bytes.mqttVariableByteInteger(at: 1) else { return nil }
        guard remainingLength <= maximumRemainingLength else {
            throw .packetTooLarge(size: remainingLength, maximum: maximumRemainingLength)
        }
        if let required = requiredRemainingLength(of: type, version5: version5), remainingLength != required {
            throw .invalidRemainingLength(packetType: type, remainingLength: remainingLength)
        }
        var header = FixedHeader(
            type: type, flags: flags, remainingLength: remainingLength, byteCount: 1 + lengthByteCount)
        let bodyStart = header.byteCount
        if remainingLength >= 2, bytes.count >= bodyStart + 2 {
            header.bodyPrefix = UInt16(bytes[bodyStart]) << 8 | UInt16(bytes[bodyStart + 1])
        }
        return header
    }

    /// Maps the type nibble to a packet type, rejecting 0 and (before MQTT 5) 15.
    private static func validatedType(_ nibble: UInt8, version5: Bool) throws(MQTTCodecError) -> PacketType {
        guard let type = PacketType(rawValue: nibble), type != .auth || version5 else {
            throw .reservedPacketType(nibble)
        }
        return type
    }

    /// Checks the low nibble against the values MQTT 3.1.1 table 2.2 allows for `type`.
    static func validate(flags: UInt8, for type: PacketType) throws(MQTTCodecError) {
        if type == .publish {
            let qosBits = (flags >> 1) & 0b11
            guard qosBits != 0b11 else { throw .invalidPublishQoS }
            guard !(qosBits == 0 && flags & 0b1000 != 0) else { throw .duplicateFlagOnQoS0 }
            return
        }
        guard flags == requiredFlags(of: type) else {
            throw .invalidFixedHeaderFlags(packetType: type, flags: flags)
        }
    }

    /// The fixed flags of every packet type except PUBLISH, whose flags carry DUP, QoS and RETAIN.
    static func requiredFlags(of type: PacketType) -> UInt8 {
        switch type {
        case .pubrel, .subscribe, .unsubscribe:
            return 0b0010
        case .connect, .connack, .publish, .puback, .pubrec, .pubcomp, .suback, .unsuback, .pingreq, .pingresp,
            .disconnect, .auth:
            return 0
        }
    }

    /// The remaining length the protocol fixes for `type`, or nil when it varies. MQTT 5 adds reason codes and
    /// properties to every packet but PINGREQ and PINGRESP.
    static func requiredRemainingLength(of type: PacketType, version5: Bool) -> Int? {
        if version5 { return type == .pingreq || type == .pingresp ? 0 : nil }
        switch type {
        case .connack, .puback, .pubrec, .pubrel, .pubcomp, .unsuback:
            return 2
        case .pingreq, .pingresp, .disconnect:
            return 0
        case .connect, .publish, .subscribe, .suback, .unsubscribe, .auth:
            return nil
        }
    }
}

extension FixedHeader {
    /// Decodes the packet's body (variable header and payload) with `decode`, from a slice of `buffer`, whose
    /// readable bytes start with this header and hold the whole packet.
    func decodeBody<Packet>(
        in buffer: ByteBuffer, with decode: (inout ByteBuffer) throws(MQTTCodecError) -> Packet
    ) throws(MQTTCodecError) -> Packet {
        var body = buffer.getSlice(at: buffer.readerIndex + byteCount, length: remainingLength) ?? ByteBuffer()
        return try decode(&body)
    }
}

extension ByteBuffer {
    /// Throws ``MQTTCodecError/trailingBytes(count:)`` unless every byte of the packet body has been read.
    func expectMQTTPacketEnd() throws(MQTTCodecError) {
        guard readableBytes == 0 else { throw .trailingBytes(count: readableBytes) }
    }
}
