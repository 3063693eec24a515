import NIOCore

/// The on-disk framing shared by the snapshot and the log.
///
/// ```
/// header (24 bytes): magic "MQCHPERS" | version UInt16 | kind UInt8 (1 snapshot, 2 log) | 0 |
///                    generation UInt64 | CRC-32 of the 20 bytes before it
/// record:            length UInt32 (of the body) | CRC-32 UInt32 (of the body) | body (type byte + fields)
/// ```
/// All integers big-endian. A snapshot's last record is ``PersistentRecord/snapshotEnd(recordCount:)``; a log has
/// no end marker (it is cut wherever the broker stopped).
enum PersistenceFileFormat {
    static let magic: [UInt8] = Array("MQCHPERS".utf8)
    /// The format version written. Version 2 adds the MQTT 5 state (session lifetimes, subscription options, message
    /// properties and expiry) as new record types and flag bits; version 3 adds delayed wills. Older files are still
    /// read (and rewritten in the current version by the compaction at start). Files of any other version are refused.
    static let version: UInt16 = 3
    /// The versions read.
    static let readableVersions: ClosedRange<UInt16> = 1...3
    static let headerSize = 24
    static let recordPrefixSize = 8
    /// No record is larger (an MQTT payload is at most 256 MB); a bigger length prefix is damage.
    static let maximumRecordLength: UInt32 = 300 * 1024 * 1024

    /// Which file a header belongs to.
    enum FileKind: UInt8, Sendable {
        case snapshot = 1
        case log = 2

        var name: String { self == .snapshot ? "snapshot" : "log" }
    }

    /// The header of a new file (`version` other than the current one only for tests that write old files).
    static func header(kind: FileKind, generation: UInt64, version: UInt16 = version) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeBytes(magic)
        buffer.writeInteger(version)
        buffer.writeInteger(kind.rawValue)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(generation)
        buffer.writeInteger(CRC32.checksum(buffer.readableBytesView))
        return buffer
    }

    /// Appends one framed record.
    static func appendRecord(_ record: PersistentRecord, to buffer: inout ByteBuffer) {
        let prefixIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        buffer.writeInteger(UInt32(0))
        let bodyStart = buffer.writerIndex
        record.encodeBody(into: &buffer)
        let bodyLength = buffer.writerIndex - bodyStart
        let checksum = buffer.withUnsafeReadableBytes { raw in
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[(bodyStart - buffer.readerIndex)...]))
        }
        buffer.setInteger(UInt32(truncatingIfNeeded: bodyLength), at: prefixIndex)
        buffer.setInteger(checksum, at: prefixIndex + 4)
    }

    /// What reading a file produced: every record up to the first damage, and the damage, if any.
    struct ReadResult: Sendable {
        /// The format version of the file.
        var version: UInt16
        var generation: UInt64
        var records: [PersistentRecord]
        var damage: PersistenceDamage?
        /// Whether the damage is a torn tail: the last record of the file, cut or garbled by a crash mid-append
        /// (incomplete, or failing its checksum while ending exactly at the end of the file, or followed only by
        /// zero bytes). Anything else is damage in the middle.
        var damageIsTornTail: Bool
        /// The offset just after the last good record (where a torn log is truncated).
        var validLength: Int
    }

    /// Reads a whole file. Header problems throw; record damage is reported in the result.
    static func read(_ bytes: ByteBuffer, path: String, kind: FileKind) throws(PersistenceError) -> ReadResult {
        var buffer = bytes
        let fileSize = buffer.readableBytes
        guard fileSize >= magic.count, buffer.getBytes(at: buffer.readerIndex, length: magic.count) == magic else {
            if fileSize < magic.count, buffer.readableBytesView.elementsEqual(magic.prefix(fileSize)) {
                throw .damagedHeader(path: path, reason: "file is \(fileSize) bytes, shorter than the \(headerSize)-byte header")
            }
            throw .badMagic(path: path)
        }
        guard fileSize >= headerSize, let headerBytes = buffer.readSlice(length: headerSize) else {
            throw .damagedHeader(path: path, reason: "file is \(fileSize) bytes, shorter than the \(headerSize)-byte header")
        }
        var header = headerBytes
        header.moveReaderIndex(forwardBy: magic.count)
        let version = header.readInteger(as: UInt16.self) ?? 0
        guard readableVersions.contains(version) else {
            throw .unsupportedVersion(path: path, found: version, supported: Self.version)
        }
        let kindByte = header.readInteger(as: UInt8.self) ?? 0
        _ = header.readInteger(as: UInt8.self)
        let generation = header.readInteger(as: UInt64.self) ?? 0
        let storedHeaderCRC = header.readInteger(as: UInt32.self) ?? 0
        let computedHeaderCRC = CRC32.checksum(headerBytes.readableBytesView.prefix(headerSize - 4))
        guard storedHeaderCRC == computedHeaderCRC else {
            throw .damagedHeader(path: path, reason: "header checksum mismatch")
        }
        guard kindByte == kind.rawValue else { throw .wrongFileKind(path: path, expected: kind.name) }

        var records: [PersistentRecord] = []
        var offset = headerSize
        while buffer.readableBytes > 0 {
            let recordNumber = records.count + 1
            func damage(_ reason: PersistenceDamage.Reason, tornTail: Bool) -> ReadResult {
                ReadResult(
                    version: version, generation: generation, records: records,
                    damage: PersistenceDamage(offset: offset, recordNumber: recordNumber, reason: reason, discardedBytes: fileSize - offset),
                    damageIsTornTail: tornTail || onlyZeros(buffer), validLength: offset)
            }
            guard buffer.readableBytes >= recordPrefixSize,
                let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
                let storedCRC = buffer.getInteger(at: buffer.readerIndex + 4, as: UInt32.self)
            else {
                return damage(.truncated(needed: recordPrefixSize, available: buffer.readableBytes), tornTail: true)
            }
            guard length > 0, length <= maximumRecordLength else {
                return damage(.invalidLength(length), tornTail: false)
            }
            let total = recordPrefixSize + Int(length)
            guard buffer.readableBytes >= total else {
                return damage(.truncated(needed: total, available: buffer.readableBytes), tornTail: true)
            }
            let endsFile = buffer.readableBytes == total
            guard var body = buffer.getSlice(at: buffer.readerIndex + recordPrefixSize, length: Int(length)) else {
                return damage(.truncated(needed: total, available: buffer.readableBytes), tornTail: true)
            }
            let computedCRC = CRC32.checksum(body.readableBytesView)
            guard computedCRC == storedCRC else {
                return damage(.checksumMismatch(stored: storedCRC, computed: computedCRC), tornTail: endsFile)
            }
            do {
                records.append(try PersistentRecord.decode(body: &body, version: version))
            } catch {
                return damage(.undecodable(error.description), tornTail: false)
            }
            buffer.moveReaderIndex(forwardBy: total)
            offset += total
        }
        return ReadResult(version: version, generation: generation, records: records, damage: nil, damageIsTornTail: false, validLength: offset)
    }

    private static func onlyZeros(_ buffer: ByteBuffer) -> Bool {
        buffer.readableBytes > 0 && !buffer.readableBytesView.contains { $0 != 0 }
    }
}
