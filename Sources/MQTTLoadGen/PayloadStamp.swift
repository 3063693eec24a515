public import NIOCore

/// The 16 bytes every benchmark payload starts with: who sent the message, which one it is, and when.
///
/// Big-endian layout: publisher index (UInt32), sequence number (UInt32), send time in nanoseconds of the
/// monotonic clock (`NIODeadline.now().uptimeNanoseconds`, UInt64). The rest of the payload is zero padding.
public struct PayloadStamp: Sendable, Hashable {
    /// Size of the stamp; payloads are never smaller than this.
    public static let byteCount = 16
    /// Offset of the sequence number inside the stamp.
    static let sequenceOffset = 4
    /// Offset of the send time inside the stamp.
    static let sendTimeOffset = 8

    /// Index of the publisher that sent the message (0-based).
    public var publisherIndex: UInt32
    /// Per-publisher sequence number, starting at 0.
    public var sequence: UInt32
    /// Monotonic send time in nanoseconds.
    public var sendTimeNanos: UInt64

    /// Creates a stamp.
    public init(publisherIndex: UInt32, sequence: UInt32, sendTimeNanos: UInt64) {
        self.publisherIndex = publisherIndex
        self.sequence = sequence
        self.sendTimeNanos = sendTimeNanos
    }

    /// Reads a stamp from the front of `bytes`; nil if there are fewer than 16.
    public static func read(from bytes: UnsafeRawBufferPointer) -> PayloadStamp? {
        guard bytes.count >= byteCount else { return nil }
        return PayloadStamp(
            publisherIndex: UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)),
            sequence: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: sequenceOffset, as: UInt32.self)),
            sendTimeNanos: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: sendTimeOffset, as: UInt64.self)))
    }

    /// Reads a stamp at `index` of `buffer` without moving its reader index; nil if fewer than 16 readable
    /// bytes are there.
    public static func read(from buffer: ByteBuffer, at index: Int) -> PayloadStamp? {
        let offset = index - buffer.readerIndex
        guard offset >= 0, offset <= buffer.readableBytes else { return nil }
        return buffer.withUnsafeReadableBytes { read(from: UnsafeRawBufferPointer(rebasing: $0[offset...])) }
    }

    /// Appends the stamp followed by zero padding up to `payloadSize` bytes (at least 16).
    public func write(into buffer: inout ByteBuffer, payloadSize: Int) {
        buffer.writeInteger(publisherIndex)
        buffer.writeInteger(sequence)
        buffer.writeInteger(sendTimeNanos)
        buffer.writeRepeatingByte(0, count: max(0, payloadSize - Self.byteCount))
    }
}
