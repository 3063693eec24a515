import NIOCore

/// Coalescing buffers whose bytes the kernel has taken, for the next connection that writes: without them a broker
/// at a low rate allocates and frees a buffer for every flush. A few, and none larger than ``maxCapacity``, so
/// they cost the core at most 256 KB.
struct OutputBufferPool {
    static let maxBuffers = 8
    static let maxCapacity = 32 * 1024

    private var spare: [ByteBuffer] = []

    /// Where the spare buffers' bytes are (for tests: the pool must keep its storage over real socket writes).
    var storageAddresses: [UInt] {
        spare.map { $0.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) } }
    }

    /// A written buffer to coalesce output into, if one is spare.
    mutating func take() -> ByteBuffer? {
        spare.popLast()
    }

    /// `buffer` was written in full. Should anything still hold it, `clear()` gives the pool new storage instead,
    /// so a pooled buffer never shares bytes with anyone.
    ///
    /// The buffer is taken, not borrowed: a caller that hands over its last reference (`consume`) lets `clear()`
    /// keep the storage. A borrowed buffer would always look shared (the caller's copy and this one), and the pool
    /// would allocate a new buffer for every flush, which is what it exists to avoid.
    mutating func recycle(_ buffer: consuming ByteBuffer) {
        guard spare.count < Self.maxBuffers, buffer.capacity <= Self.maxCapacity else { return }
        buffer.clear()
        spare.append(buffer)
    }
}
