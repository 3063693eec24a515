import MQTTCore
import NIOCore

/// Flow control of the broker core: publisher back-pressure (``PublisherBackpressure``) and the drop counters of
/// slow consumers (``PendingOutputGate``). Everything here runs on the core's event loop.
extension BrokerCore {
    /// The number of connections the core currently does not read because they fill a congested session
    /// (`$SYS/broker/clients/backpressured`).
    var backpressuredConnectionCount: Int { backpressure?.pausedConnectionCount ?? 0 }

    /// How many times a connection was paused since the start (`$SYS/broker/clients/backpressure_pauses`).
    var backpressurePauseCount: UInt64 { backpressure?.pauseCount ?? 0 }

    /// A delivery at `qos` was queued (or dropped) for `session`: pause `publisher` if the session is online, not
    /// the publisher's own, and its queue is above the high watermark; above three quarters of its limits, stop
    /// the publisher's read batch in progress as well.
    func holdBackPublisher(_ publisher: BrokerConnectionHandler?, for session: BrokerSession, qos: QoS) {
        guard let publisher, backpressure != nil, qos != .atMostOnce, let subscriber = session.connection,
            subscriber !== publisher, session.outbound.isAboveHighWatermark
        else { return }
        var actions = takeBackpressureActions()
        backpressure?.queueAboveHighWatermark(
            session: session.key, publisher: ObjectIdentifier(publisher), now: now, into: &actions)
        apply(&actions)
        if publisher.isReadingPausedByCore, session.outbound.isAboveHaltWatermark {
            publisher.haltDecodingByCore()
        }
    }

    /// `session` acknowledged something: it is draining; resume its publishers one at a time below the high
    /// watermark, and all of them at the low watermark.
    func noteProgress(of session: BrokerSession) {
        // Optional chaining, not `guard let`: no copy of the state machine on every acknowledgement.
        guard backpressure?.isIdle == false else { return }
        let level: PublisherBackpressure<ObjectIdentifier, SessionKey>.QueueLevel =
            session.outbound.isBelowLowWatermark
            ? .belowLowWatermark : session.outbound.isAboveHighWatermark ? .aboveHighWatermark : .belowHighWatermark
        // Progress is timed per read batch (`now` is the batch's start), so once a batch reported it, a later
        // acknowledgement in the same batch only has news when it took the queue below a watermark: below the high
        // one (resuming one publisher) once per batch, down to the low one (resuming all) every time. The other
        // acknowledgements need no lookup.
        let now = self.now
        if isInPipelineRead, session.progressNotedAt == now {
            switch level {
            case .aboveHighWatermark: return
            case .belowHighWatermark: if session.drainNotedAt == now { return }
            case .belowLowWatermark: break
            }
        }
        session.progressNotedAt = now
        if level == .belowHighWatermark { session.drainNotedAt = now }
        var actions = takeBackpressureActions()
        backpressure?.progress(session: session.key, level: level, now: now, into: &actions)
        apply(&actions)
    }

    /// `session` lost its connection: it holds no publisher back any more.
    func sessionWentOffline(_ session: BrokerSession) {
        guard backpressure?.isIdle == false else { return }
        var actions = backpressure?.sessionGone(session.key) ?? []
        apply(&actions)
    }

    /// A QoS 0 message for a slow consumer was dropped.
    func noteDroppedSlowConsumer(_ session: BrokerSession) {
        statistics.publishDropped += 1
        statistics.publishDroppedSlowConsumer += 1
        let dropped = session.outbound.slowConsumerDroppedCount
        guard dropped & (dropped - 1) == 0 else { return }  // logged at the 1st, 2nd, 4th ... drop
        logger.notice(
            "slow consumer: QoS 0 message dropped",
            metadata: ["client": "\(session.clientID)", "dropped": "\(dropped)"]
        )
    }

    /// The array the back-pressure state appends its actions to, reused: it is consulted for every message routed
    /// into a congested queue. A nested use (none today) would find it taken and start an empty one.
    private func takeBackpressureActions() -> [PublisherBackpressure<ObjectIdentifier, SessionKey>.Action] {
        var actions: [PublisherBackpressure<ObjectIdentifier, SessionKey>.Action] = []
        swap(&actions, &spareBackpressureActions)
        return actions
    }

    /// Carries out `actions` and hands the emptied array back for reuse.
    private func apply(_ actions: inout [PublisherBackpressure<ObjectIdentifier, SessionKey>.Action]) {
        for action in actions {
            switch action {
            case .pause(let id):
                connections[id]?.pauseReadingByCore()
            case .resume(let id):
                connections[id]?.resumeReadingByCore()
            }
        }
        actions.removeAllKeepingStorage()
        swap(&actions, &spareBackpressureActions)
        scheduleStallCheck()
    }

    /// Arms the timer that releases the publishers of sessions that stopped acknowledging.
    private func scheduleStallCheck() {
        guard stallCheckTask == nil, !isShuttingDown, let deadline = backpressure?.nextStallDeadline else { return }
        // `self` is captured strongly, as in every timer of the core (see ``scheduleDeadlineTimer()``).
        stallCheckTask = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            self.stallCheckTask = nil
            var actions = self.backpressure?.checkStalls(now: self.eventLoop.now) ?? []
            if !actions.isEmpty {
                self.logger.notice("back-pressure released: a congested session stopped acknowledging")
            }
            self.apply(&actions)
        }
    }
}
