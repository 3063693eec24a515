public import NIOCore

/// Readers and writers for MQTT's primitive data representations (MQTT 3.1.1 section 1.5 and 2.2.3).
///
/// Readers throw ``MQTTCodecError`` and only move the reader index on success. Writers assume their caller
/// has checked lengths already (the encoders compute and validate sizes before writing the fixed header).
extension ByteBuffer {
    /// The largest value a two-byte length prefix can express.
    static let mqttMaximumFieldLength = Int(UInt16.max)

    // MARK: Reading

    /// Reads one byte.
    mutating func readMQTTByte() throws(MQTTCodecError) -> UInt8 {
        guard let byte = readInteger(as: UInt8.self) else { throw .unexpectedEndOfPacket }
        return byte
    }

    /// Reads a big-endian two-byte integer.
    mutating func readMQTTUInt16() throws(MQTTCodecError) -> UInt16 {
        guard let value = readInteger(endianness: .big, as: UInt16.self) else { throw .unexpectedEndOfPacket }
        return value
    }

    /// Reads a packet identifier, which must not be 0 (MQTT-2.3.1-1).
    mutating func readMQTTPacketID() throws(MQTTCodecError) -> UInt16 {
        let packetID = try readMQTTUInt16()
        guard packetID != 0 else { throw .zeroPacketIdentifier }
        return packetID
    }

    /// Reads a length-prefixed field's bytes as a slice sharing this buffer's storage (no copy).
    mutating func readMQTTBinarySlice() throws(MQTTCodecError) -> ByteBuffer {
        let length = Int(try readMQTTUInt16())
        guard let slice = readSlice(length: length) else {
            // Put the prefix back so that a failed read leaves the reader index where it was.
            moveReaderIndex(to: readerIndex - 2)
            throw .lengthPrefixExceedsPacket(declared: length, available: readableBytes - 2)
        }
        return slice
    }

    /// Reads length-prefixed binary data (password) into an array.
    mutating func readMQTTBinaryBytes() throws(MQTTCodecError) -> [UInt8] {
        let slice = try readMQTTBinarySlice()
        return Array(slice.readableBytesView)
    }

    /// Reads a length-prefixed UTF-8 string, rejecting ill-formed UTF-8 and U+0000 (MQTT-1.5.3-1, MQTT-1.5.3-2).
    mutating func readMQTTString() throws(MQTTCodecError) -> String {
        let bytes = try readMQTTBinarySlice()
        return try bytes.mqttValidatedString()
    }

    /// Decodes all readable bytes as an MQTT UTF-8 string (well-formed, no U+0000).
    func mqttValidatedString() throws(MQTTCodecError) -> String {
        let verdict = withUnsafeReadableBytes { MQTTUTF8.validate($0) }
        switch verdict {
        case .valid:
            return String(decoding: readableBytesView, as: UTF8.self)
        case .containsNull:
            throw .nullCharacterInString
        case .illFormed:
            throw .invalidUTF8
        }
    }

    /// Whether the readable bytes are exactly the UTF-8 bytes of `string`.
    func mqttBytesEqual(_ string: String) -> Bool {
        let utf8 = string.utf8
        guard utf8.count == readableBytes else { return false }
        let equal: Bool? = utf8.withContiguousStorageIfAvailable { stringBytes in
            withUnsafeReadableBytes { sameBytes($0, UnsafeRawBufferPointer(stringBytes)) }
        }
        return equal ?? readableBytesView.elementsEqual(utf8)
    }

    /// Reads a variable byte integer starting at `index` without moving the reader index.
    ///
    /// - Returns: the value and how many bytes encode it, or nil when the buffer ends before the integer does (or
    ///   `index` is outside the readable bytes).
    /// - Throws: ``MQTTCodecError/remainingLengthTooLong`` when a fourth byte still has its continuation bit.
    public func getMQTTVariableByteInteger(at index: Int) throws(MQTTCodecError) -> (value: Int, byteCount: Int)? {
        let offset = index - readerIndex
        guard offset >= 0 else { return nil }
        // One access to the bytes, not one checked `getInteger` per byte.
        return try withUnsafeReadableBytes { (bytes) throws(MQTTCodecError) in try bytes.mqttVariableByteInteger(at: offset) }
    }

    // MARK: Writing

    /// Writes a fixed header: the first byte (type and flags), then the remaining length (at most 268,435,455;
    /// callers check). A one-byte length (every acknowledgement, PING and small packet) goes with the first byte in
    /// one store: each `writeInteger` checks capacity and uniqueness again.
    public mutating func writeMQTTFixedHeader(firstByte: UInt8, remainingLength: Int) {
        if remainingLength < 128 {
            writeInteger(UInt16(firstByte) << 8 | UInt16(remainingLength))
        } else {
            writeInteger(firstByte)
            writeMQTTVariableByteInteger(remainingLength)
        }
    }

    /// Writes a variable byte integer (at most 268,435,455; callers check).
    mutating func writeMQTTVariableByteInteger(_ value: Int) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: 4) { $0.storeMQTTVariableByteInteger(value, at: 0) }
    }

    /// Writes a length-prefixed UTF-8 string whose length the caller has checked.
    mutating func writeMQTTString(_ string: String) {
        writeInteger(UInt16(truncatingIfNeeded: string.utf8.count))
        writeString(string)
    }

    /// Writes length-prefixed binary data whose length the caller has checked.
    mutating func writeMQTTBinary(_ bytes: ByteBuffer) {
        writeInteger(UInt16(truncatingIfNeeded: bytes.readableBytes))
        writeImmutableBuffer(bytes)
    }

    /// Writes length-prefixed binary data whose length the caller has checked.
    mutating func writeMQTTBinary(_ bytes: [UInt8]) {
        writeInteger(UInt16(truncatingIfNeeded: bytes.count))
        writeBytes(bytes)
    }
}

/// Size computations for encoders, which need a packet's remaining length before writing it.
enum MQTTWireSize {
    /// How many bytes the variable byte integer encoding of `value` takes (1 to 4).
    static func variableByteInteger(_ value: Int) -> Int {
        switch value {
        case ..<128: return 1
        case ..<16_384: return 2
        case ..<2_097_152: return 3
        default: return 4
        }
    }

    /// The wire size of a length-prefixed string; throws when it does not fit the two-byte prefix.
    static func string(_ string: String) throws(MQTTCodecError) -> Int {
        let count = string.utf8.count
        guard count <= ByteBuffer.mqttMaximumFieldLength else { throw .stringTooLong(byteCount: count) }
        return 2 + count
    }

    /// The wire size of length-prefixed binary data; throws when it does not fit the two-byte prefix.
    static func binary(byteCount count: Int) throws(MQTTCodecError) -> Int {
        guard count <= ByteBuffer.mqttMaximumFieldLength else { throw .binaryDataTooLong(byteCount: count) }
        return 2 + count
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Stores a variable byte integer (at most 268,435,455; callers check) at `offset`, where at least four bytes
    /// must be writable, and returns how many bytes it took (1 to 4).
    public func storeMQTTVariableByteInteger(_ value: Int, at offset: Int) -> Int {
        var remaining = value
        var position = offset
        repeat {
            var byte = UInt8(truncatingIfNeeded: remaining & 0x7F)
            remaining >>= 7
            if remaining > 0 { byte |= 0x80 }
            self[position] = byte
            position += 1
        } while remaining > 0
        return position - offset
    }
}

extension UnsafeRawBufferPointer {
    /// Reads a variable byte integer starting at `offset` (MQTT 3.1.1 section 2.2.3).
    ///
    /// - Returns: the value and how many bytes encode it, or nil when the bytes end before the integer does.
    /// - Throws: ``MQTTCodecError/remainingLengthTooLong`` when a fourth byte still has its continuation bit.
    public func mqttVariableByteInteger(at offset: Int) throws(MQTTCodecError) -> (value: Int, byteCount: Int)? {
        var value = 0
        var multiplier = 1
        for position in offset..<offset + 4 {
            guard position < count else { return nil }
            let byte = self[position]
            value += Int(byte & 0x7F) * multiplier
            if byte & 0x80 == 0 {
                return (value, position - offset + 1)
            }
            multiplier *= 128
        }
        throw .remainingLengthTooLong
    }
}
