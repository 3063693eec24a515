import NIOCore

/// What a connection has written since its last flush: small packets coalesced into one buffer (the acks and
/// PUBLISHes of one batch leave as one write instead of one buffer, and one allocation, each), how many bytes were
/// handed to the transport, and whether the output may wait for the end of the loop tick.
struct ConnectionOutput {
    /// The coalescing buffer's first size: a batch of acks and small PUBLISHes fits, and it stays below glibc's
    /// large-chunk threshold (1,024 bytes), whose allocations first consolidate every freed small chunk.
    static let initialCapacity = 512
    /// Coalesced output above this size is handed to the transport at once, so one burst cannot grow it unbounded.
    static let handOverThreshold = 64 * 1024

    /// The coalesced bytes not handed to the transport yet.
    private var buffer: ByteBuffer?
    /// Bytes handed to the transport since the last flush, reported back by the socket's loop once written.
    var unflushedBytes = 0
    /// Whether there are unflushed writes (managed by ``OutputFlusher/markDirty(_:)``).
    var isDirty = false
    /// Whether everything written since the last flush acknowledges the client's own publishes (PUBACK, PUBREC,
    /// PUBCOMP): output that may wait for the end of the loop tick
    /// (``OutputFlusher/flushDirty(deferringAcknowledgements:)``).
    var holdsOnlyAcknowledgements = true

    /// Whether nothing is coalesced, handed over or waiting for a flush.
    var isEmpty: Bool { buffer == nil && !isDirty && unflushedBytes == 0 }

    /// Runs `body` on the coalescing buffer: the one in use, else a written one from `pool`, else a new one. Returns
    /// whether the buffer grew past ``handOverThreshold`` and should be handed over now.
    @inline(__always)
    mutating func append(
        pool: inout OutputBufferPool, allocator: ByteBufferAllocator, _ body: (inout ByteBuffer) -> Void
    ) -> Bool {
        // Moved out and back (`take`, `consume`), never copied: a copy is a retain and release per packet.
        var current = buffer.take() ?? pool.take() ?? allocator.buffer(capacity: Self.initialCapacity)
        body(&current)
        let full = current.readableBytes >= Self.handOverThreshold
        buffer = consume current
        return full
    }

    /// Hands the coalesced bytes to `transport` (not flushed); an empty buffer is dropped.
    mutating func handOver(to transport: (any ConnectionTransport)?) {
        guard let coalesced = buffer.take() else { return }
        guard coalesced.readableBytes > 0, let transport else { return }
        transport.write(coalesced, ownBuffer: true)
    }

    /// The flush begins: returns the bytes handed over since the last one, and starts counting anew.
    mutating func beginFlush() -> Int {
        isDirty = false
        holdsOnlyAcknowledgements = true
        let bytes = unflushedBytes
        unflushedBytes = 0
        return bytes
    }

    /// Drops what was not handed over (the connection closed).
    mutating func discard() {
        buffer = nil
    }
}
