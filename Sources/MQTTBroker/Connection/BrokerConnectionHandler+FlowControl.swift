import NIOCore

/// Flow control of one connection, carrying out what its value types decide: the pending-output bound (slow
/// consumers, ``PendingOutputGate``) and reading paused by the core (publisher back-pressure, ``ReadPause``).
/// Runs on the core's event loop.
extension BrokerConnectionHandler {
    // MARK: Pending output

    /// `bytes` were handed to the transport (not flushed yet); a `delivery` is a PUBLISH to the client.
    func noteHanded(_ bytes: Int, delivery: Bool = false) {
        output.unflushedBytes += bytes
        // The gate reads the clock only when the output becomes blocked: not once per write.
        applyOutputGate(
            delivery
                ? outputGate.handedDelivery(bytes, now: core.eventLoop.now) : outputGate.handed(bytes, now: core.eventLoop.now))
    }

    /// Flushes the transport; the socket's loop reports the batch's bytes back once they are written.
    func flushTransport() {
        let bytes = output.beginFlush()
        transport?.flush(reportingWritten: bytes, to: self)
    }

    /// The socket's loop wrote (or, closing, discarded) a flushed batch of `bytes`.
    func outputWritten(_ bytes: Int) {
        applyOutputGate(outputGate.written(bytes))
    }

    private func applyOutputGate(_ action: PendingOutputGate.Action) {
        switch action {
        case .none:
            return
        case .block(let closeAt):
            session?.outbound.outputBlocked()
            logger.notice(
                "slow consumer: output blocked, QoS 0 dropped and QoS 1/2 queued until it drains",
                metadata: ["pendingBytes": "\(outputGate.pendingBytes)"])
            slowConsumerTimer?.cancel()
            slowConsumerTimer = closeAt.map { deadline in
                // Strong captures here and below: `close` cancels this timer, and a weak reference would give the
                // handler a side table, which sends every later retain and release of it down the slow path.
                core.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
                    self.slowConsumerTimer = nil
                    if self.outputGate.timerFired(now: self.core.eventLoop.now) {
                        self.closeSlowConsumer()
                    }
                }
            }
        case .unblock:
            slowConsumerTimer?.cancel()
            slowConsumerTimer = nil
            logger.debug("slow consumer: output drained", metadata: ["pendingBytes": "\(outputGate.pendingBytes)"])
            if let session, session.connection === self {
                core.perform(session.outbound.outputUnblocked(), for: session)
                core.flushDirty()
            }
        case .close:
            // Not from inside the write that crossed the hard bound: the caller may be iterating sessions.
            core.eventLoop.assumeIsolated().execute { [self] in
                self.closeSlowConsumer()
            }
        }
    }

    private func closeSlowConsumer() {
        guard isOpen else { return }
        core.statistics.slowConsumerDisconnects += 1
        logger.warning(
            "closing slow consumer",
            metadata: ["pendingBytes": "\(outputGate.pendingBytes)", "limit": "\(outputGate.limit)"])
        close(.slowConsumer)
        core.flushDirty()
    }

    // MARK: Reading paused by the core

    /// Whether the core paused this connection (publisher back-pressure).
    var isReadingPausedByCore: Bool { readPause.isPaused }

    /// Decodes no PUBLISH the client sends after the read batch in progress (nor anything behind one): a session
    /// this connection publishes into is congested (``ReadPause``).
    func pauseReadingByCore() {
        guard isOpen, readPause.pause(pendingInput: pendingInputBytes) else { return }
        transport?.setReadingPausedByCore(true)
    }

    /// Applies the pause to the read batch in progress as well, from its next PUBLISH on (a congested session is
    /// above three quarters of its limits).
    func haltDecodingByCore() {
        readPause.haltDecoding()
    }

    /// Stops reading the socket of a paused connection once enough input waits to be decoded.
    func stopSocketReadsIfPausedInputIsLarge() {
        guard readPause.inputArrived(pendingInput: pendingInputBytes) else { return }
        transport?.setReadingPausedByCore(true)
    }

    /// Reads again: decodes what arrived meanwhile (on a later turn of the loop, not inside the caller), then lets
    /// the socket read once nothing paused it again.
    func resumeReadingByCore() {
        guard readPause.resume() else { return }
        core.eventLoop.assumeIsolated().execute { [self] in  // strong: see the slow-consumer timer above
            guard self.isOpen, !self.readPause.isPaused else { return }
            self.core.flusher.decodeAsReadBatch { self.decodeAvailablePackets() }
            if self.readPause.socketMayResume() {
                self.transport?.setReadingPausedByCore(false)
            }
        }
    }
}
