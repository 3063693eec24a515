import NIOCore

/// Accumulates inbound bytes until whole packets can be scanned, without copying when a read holds only whole
/// packets.
struct InboundBuffer {
    private var pending: ByteBuffer?

    /// Adds a read's bytes.
    mutating func append(_ incoming: ByteBuffer) {
        if var existing = pending {
            pending = nil  // keep the storage uniquely referenced so the write does not copy it
            existing.writeImmutableBuffer(incoming)
            pending = existing
        } else {
            pending = incoming
        }
    }

    /// Scans every whole packet, calling `body` for each; leaves a trailing partial packet for the next read.
    mutating func forEachFrame(
        _ scanner: inout InboundFrameScanner, _ body: (InboundFrame) throws(LoadGenError) -> Void
    ) throws(LoadGenError) {
        guard var buffer = pending else { return }
        pending = nil
        defer {
            if buffer.readableBytes > 0 {
                if buffer.readerIndex > 64 * 1024 { buffer.discardReadBytes() }
                pending = buffer
            }
        }
        while let frame = try scanner.next(from: &buffer) {
            try body(frame)
        }
    }
}
