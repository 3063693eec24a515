#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLinuxSockets
import EpollEventLoop
import NIOCore

/// A plain-TCP socket served on the broker core's own ``EpollEventLoop`` with plain `read(2)` and `write(2)`: no
/// SwiftNIO channel, pipeline or second thread between the socket and its ``BrokerConnectionHandler``
/// (`socket_engine auto` with one loop, ``SocketEngine``).
///
/// It does what SwiftNIO's channel did for the handler:
/// - **Reading.** On readiness it reads up to ``maximumReadsPerWakeup`` times into a receive buffer sized like
///   NIO's (``MQTTBrokerServer/receiveBufferSizing``) and hands each read to `received`. Then it ends the read
///   batch as `channelReadComplete` did: the core flushes what the batch wrote. End of file goes to
///   `transportInactive`, a read error to `transportFailed`.
/// - **Writing.** A flush goes straight to the socket. What the kernel does not take waits here, in order, and
///   leaves when the socket is writable again. Each flush's bytes are reported written (`outputWritten`) once
///   they left memory, as NIO's write promises reported them, so the pending-output bound works unchanged.
/// - **Back-pressure.** Pausing reads on behalf of the core (``setReadingPausedByCore(_:)``) drops the read interest.
///   A paused socket still hears of a reset or hang-up.
///
/// Confined to the core's loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``). The
/// connection and this transport hold each other until the socket closes.
final class EpollSocketTransport: EpollEventHandler, ConnectionTransport {
    /// Reads per readiness report, as NIO's `maxMessagesPerRead`: a busy socket cannot starve the others.
    static let maximumReadsPerWakeup = 4
    /// Buffers one `writev` takes at most (below `IOV_MAX`).
    static let maximumBuffersPerWrite = 64

    /// The socket, owned here: closed by ``close()``.
    let descriptor: CInt
    /// The client's address, for the logs.
    let remoteAddress: SocketAddress?
    private let loop: EpollEventLoop

    @exclusivity(unchecked) private var handler: BrokerConnectionHandler?
    @exclusivity(unchecked) private(set) var isClosed = false
    /// Half-closed after an MQTT 5 DISCONNECT: what arrives is read and dropped until the close.
    @exclusivity(unchecked) private var isLingering = false

    // Reading
    @exclusivity(unchecked) private var sizing = MQTTBrokerServer.receiveBufferSizing
    /// The last read's buffer, reused when nothing else still holds its bytes.
    @exclusivity(unchecked) private var receiveBuffer: ByteBuffer?
    @exclusivity(unchecked) private var isReadingPaused = false
    @exclusivity(unchecked) private var interest: EpollInterest = .readable

    // Writing
    /// The first buffer written since the last flush, and whether it is the handler's own coalescing buffer (which
    /// goes back to the core's pool once written).
    @exclusivity(unchecked) private var held: ByteBuffer?
    @exclusivity(unchecked) private var heldIsOwnBuffer = false
    /// Buffers written after ``held`` in the same batch (a large payload's own buffer).
    @exclusivity(unchecked) private var heldMore: [ByteBuffer] = []
    /// Flushed bytes the kernel has not taken yet, in order.
    @exclusivity(unchecked) private var backlog: [ByteBuffer] = []
    /// For each flush still in ``backlog``: where it ends in the socket's output stream, and the bytes to report.
    @exclusivity(unchecked) private var reports: [(end: Int, bytes: Int)] = []
    /// Bytes ever put into ``backlog``, and bytes of it ever written.
    @exclusivity(unchecked) private var backlogQueued = 0
    @exclusivity(unchecked) private var backlogWritten = 0
    /// A write failed; the connection is being closed, and further output is dropped (and reported written, as
    /// NIO failed the writes of a closing channel).
    @exclusivity(unchecked) private var writeFailed = false

    var socketEventLoop: any EventLoop { loop }
    /// An epoll socket has no channel to give up.
    var parkingSupport: ParkingSupport { .unsupported }

    /// Takes over `descriptor`, a connected non-blocking socket; it is read once ``attach(_:)`` gave it a connection.
    init(descriptor: CInt, remoteAddress: SocketAddress?, loop: EpollEventLoop) {
        self.descriptor = descriptor
        self.remoteAddress = remoteAddress
        self.loop = loop
    }

    /// Serves `socket`, just accepted, as a new connection of `core`, which runs on `loop`. Call on the loop.
    static func serve(_ socket: CInt, core: BrokerCore, loop: EpollEventLoop) {
        let transport = EpollSocketTransport(descriptor: socket, remoteAddress: try? SocketAddress.peer(of: socket), loop: loop)
        do {
            try loop.register(socket, interest: .readable, handler: transport)
        } catch {
            core.logger.notice("could not take an accepted socket", metadata: ["error": "\(error)"])
            Descriptor.close(socket)
            return
        }
        _ = BrokerConnectionHandler(core: core, epollSocket: transport)  // held by the transport from here on
    }

    /// The connection this socket serves.
    func attach(_ handler: BrokerConnectionHandler) {
        self.handler = handler
    }

    // MARK: Reading

    func descriptorReadable(_ descriptor: CInt) {
        if isLingering {
            dropLingeringInput()
            return
        }
        guard let handler, !isClosed else { return }
        guard !isReadingPaused else {
            checkPausedSocket(handler)
            return
        }
        let core = handler.core
        var ending: Ending?
        var reads = 0
        while reads < Self.maximumReadsPerWakeup, !isClosed, !isReadingPaused {
            let size = sizing.currentSize
            var buffer = receiveBuffer.take() ?? core.allocator.buffer(capacity: size)
            buffer.clear()  // new storage when someone still holds the last read's bytes
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { raw in
                result = read(self.descriptor, raw.baseAddress, min(raw.count, size))
                return max(result, 0)
            }
            if result < 0 {
                let error = errno
                if error == EINTR { continue }
                if error != EAGAIN && error != EWOULDBLOCK { ending = .failed(error) }
                receiveBuffer = buffer
                break
            }
            if result == 0 {
                ending = .endOfFile
                break
            }
            reads += 1
            if reads == 1 { core.flusher.readBatchBegins() }
            _ = sizing.record(actualReadBytes: result)
            handler.received(buffer)
            receiveBuffer = sizing.currentSize == size ? buffer : nil  // a new size gets a new buffer
            if result < size { break }
        }
        if reads > 0 {
            core.flusher.readBatchEnds()
            core.flushDirty(deferringAcknowledgements: true)
        }
        if let ending, !isClosed { end(handler, ending) }
    }

    /// How reading ended, when it ended the connection.
    private enum Ending {
        case endOfFile
        case failed(CInt)
    }

    private func end(_ handler: BrokerConnectionHandler, _ ending: Ending) {
        switch ending {
        case .endOfFile:
            handler.transportInactive()
        case .failed(let error):
            handler.transportFailed("read: \(String(cString: strerror(error)))")
        }
    }

    /// A paused socket is not watched for reading, so it is reported only on a hang-up or an error (a reset): end
    /// the connection. Unread bytes do not count (a reset socket still holds what it received before), so the
    /// socket's error is asked first; without one, a peek tells an end of file from a spurious report.
    private func checkPausedSocket(_ handler: BrokerConnectionHandler) {
        var error: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error != 0 {
            end(handler, .failed(error))
            return
        }
        var byte: UInt8 = 0
        let result = recv(descriptor, &byte, 1, CInt(MSG_PEEK | MSG_DONTWAIT))
        if result == 0 {
            end(handler, .endOfFile)
        } else if result < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
            end(handler, .failed(errno))
        }
    }

    // MARK: Writing

    /// Queues `buffer` for the next flush. An `ownBuffer` (the handler's coalescing buffer) goes back to the core's
    /// pool once written.
    func write(_ buffer: ByteBuffer, ownBuffer: Bool) {
        guard !isClosed else { return }
        if held == nil {
            held = buffer
            heldIsOwnBuffer = ownBuffer
        } else {
            heldMore.append(buffer)
        }
    }

    /// Writes everything queued since the last flush; `handler.outputWritten(bytes)` runs once it left memory: at
    /// once when the kernel takes it all (the usual case), otherwise when the socket has drained it.
    func flush(reportingWritten bytes: Int, to handler: BrokerConnectionHandler) {
        guard var first = held.take() else { return }
        guard !isClosed, !writeFailed else {
            heldMore = []
            handler.outputWritten(bytes)
            return
        }
        if backlog.isEmpty, heldMore.isEmpty {
            let written = first.withUnsafeReadableBytes { Descriptor.write(descriptor, $0) }
            if written == first.readableBytes {
                if heldIsOwnBuffer { handler.core.recycleOutputBuffer(consume first) }
                handler.outputWritten(bytes)
                return
            }
            if written < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
                writeFailed(errno)
                handler.outputWritten(bytes)
                return
            }
            first.moveReaderIndex(forwardBy: max(written, 0))
            enqueue([first], reporting: bytes)
        } else {
            var batch = [first]
            batch.append(contentsOf: heldMore)
            heldMore = []
            enqueue(batch, reporting: bytes)
            drainBacklog()
        }
        updateInterest()
    }

    private func enqueue(_ buffers: [ByteBuffer], reporting bytes: Int) {
        for buffer in buffers {
            backlogQueued += buffer.readableBytes
            backlog.append(buffer)
        }
        reports.append((end: backlogQueued, bytes: bytes))
    }

    func descriptorWritable(_ descriptor: CInt) {
        guard !isClosed else { return }
        drainBacklog()
        updateInterest()
    }

    /// Writes the backlog until it is empty or the socket is full, reporting each flush whose bytes all left.
    private func drainBacklog() {
        while !backlog.isEmpty, !writeFailed {
            let (written, requested) = writeBacklogPrefix()
            if written < 0 {
                let error = errno
                if error == EINTR { continue }
                if error != EAGAIN && error != EWOULDBLOCK { writeFailed(error) }
                return
            }
            consumeBacklog(written)
            if written < requested { return }
        }
    }

    /// One `writev` of the backlog's first buffers: what it wrote (or -1 with `errno` set), and what it asked to.
    private func writeBacklogPrefix() -> (written: Int, requested: Int) {
        let buffers = backlog.prefix(Self.maximumBuffersPerWrite)
        return withExtendedLifetime(backlog) {
            // The backlog keeps every buffer's storage alive (and unchanged) for the length of the call.
            var vectors: [iovec] = buffers.map { buffer in
                buffer.withUnsafeReadableBytes { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
            }
            let requested = vectors.reduce(0) { $0 + $1.iov_len }
            return (vectors.withUnsafeMutableBufferPointer { writev(descriptor, $0.baseAddress, CInt($0.count)) }, requested)
        }
    }

    private func consumeBacklog(_ written: Int) {
        backlogWritten += written
        var remaining = written
        var done = 0
        while done < backlog.count, remaining >= backlog[done].readableBytes {
            remaining -= backlog[done].readableBytes
            done += 1
        }
        backlog.removeFirst(done)
        if remaining > 0 { backlog[0].moveReaderIndex(forwardBy: remaining) }
        if backlog.isEmpty { backlog = [] }  // an idle connection keeps no storage
        var reported = 0
        while reported < reports.count, reports[reported].end <= backlogWritten { reported += 1 }
        guard reported > 0 else { return }
        let due = reports.prefix(reported)
        reports.removeFirst(reported)
        if reports.isEmpty { reports = [] }
        for report in due { handler?.outputWritten(report.bytes) }
    }

    /// The socket refused a write: drop the output (reported written) and close the connection once this flush is
    /// over, as NIO closed a channel whose write failed.
    private func writeFailed(_ error: CInt) {
        writeFailed = true
        dropBacklogReportingWritten()
        let description = "write: \(String(cString: strerror(error)))"
        let handler = self.handler
        loop.assumeIsolated().execute {
            handler?.transportFailed(description)
        }
    }

    private func dropBacklogReportingWritten() {
        let due = reports
        backlog = []
        reports = []
        held = nil
        heldMore = []
        let handler = self.handler
        for report in due { handler?.outputWritten(report.bytes) }
    }

    // MARK: Interest and closing

    /// Stops (or restarts) reading on behalf of the core (publisher back-pressure).
    func setReadingPausedByCore(_ paused: Bool) {
        isReadingPaused = paused
        updateInterest()
    }

    private func updateInterest() {
        guard !isClosed else { return }
        var wanted: EpollInterest = isReadingPaused ? [] : .readable
        if !backlog.isEmpty { wanted.insert(.writable) }
        guard wanted != interest else { return }
        do {
            try loop.reregister(descriptor, interest: wanted)
            interest = wanted
        } catch {
            switch error {
            case .systemCall(_, let code): writeFailed(code)
            }
        }
    }

    /// Writes what was queued and not flushed (as a channel's close did), then closes the socket. The connection
    /// hears of it on the next loop turn (``BrokerConnectionHandler/relayRemoved()``), as NIO removed a closed
    /// channel's handlers.
    func close(lingering linger: TimeAmount) {
        guard !isClosed else { return }
        if let handler, held != nil { flush(reportingWritten: 0, to: handler) }
        // Half-close only when everything has reached the kernel; otherwise the FIN would overtake the backlog.
        guard backlog.isEmpty, shutdown(descriptor, CInt(SHUT_WR)) == 0 else {
            close()
            return
        }
        isLingering = true
        isReadingPaused = false
        updateInterest()
        loop.assumeIsolated().scheduleTask(in: linger) { [self] in close() }
    }

    /// Reads and drops what a half-closed socket receives; closes it at the client's end of file or an error.
    private func dropLingeringInput() {
        var scratch = [UInt8](repeating: 0, count: 4_096)
        while !isClosed {
            let result = read(descriptor, &scratch, scratch.count)
            if result > 0 { continue }
            if result < 0, errno == EINTR { continue }
            if result < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            close()
        }
    }

    func close() {
        guard !isClosed else { return }
        isLingering = false
        if let handler, held != nil { flush(reportingWritten: 0, to: handler) }
        isClosed = true
        loop.deregister(descriptor)
        Descriptor.close(descriptor)
        dropBacklogReportingWritten()
        receiveBuffer = nil
        guard let handler = self.handler.take() else { return }
        loop.assumeIsolated().execute {
            handler.relayRemoved()
        }
    }
}
