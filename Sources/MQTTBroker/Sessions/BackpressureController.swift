import Logging
import MQTTCore
import NIOCore

/// Publisher back-pressure (`backpressure_stall_ms`): pauses the connections that publish into an online session
/// whose queue is above its high watermark, and resumes them as the session drains or stops acknowledging. The
/// decisions are ``PublisherBackpressure``'s, a value type; this carries them out on the connections and runs its
/// stall timer. With `backpressure_stall_ms 0` it holds no state and every call returns at once.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class BackpressureController {
    typealias Action = PublisherBackpressure<ObjectIdentifier, SessionKey>.Action

    @exclusivity(unchecked) private var state: PublisherBackpressure<ObjectIdentifier, SessionKey>?
    @exclusivity(unchecked) private var stallCheckTask: Scheduled<Void>?
    /// The emptied array of actions, kept for the next use: it is consulted for every message routed into a
    /// congested queue. A nested use (none today) would find it taken and start an empty one.
    @exclusivity(unchecked) private var spareActions: [Action] = []
    @exclusivity(unchecked) private var isStopped = false

    init(stallTimeout: TimeAmount?) {
        self.state = stallTimeout.map { PublisherBackpressure(stallTimeout: $0) }
    }

    /// The connections currently not read because they fill a congested session (`$SYS/broker/clients/backpressured`).
    var pausedConnectionCount: Int { state?.pausedConnectionCount ?? 0 }

    /// How many times a connection was paused since the start (`$SYS/broker/clients/backpressure_pauses`).
    var pauseCount: UInt64 { state?.pauseCount ?? 0 }

    /// A delivery at `qos` was queued (or dropped) for `session`: pause `publisher` if the session is online, not
    /// the publisher's own, and its queue is above the high watermark; above three quarters of its limits, stop
    /// the publisher's read batch in progress as well.
    func holdBack(_ publisher: BrokerConnectionHandler?, for session: BrokerSession, qos: QoS, core: BrokerCore) {
        guard let publisher, state != nil, qos != .atMostOnce, let subscriber = session.connection,
            subscriber !== publisher, session.outbound.isAboveHighWatermark
        else { return }
        var actions = takeActions()
        state?.queueAboveHighWatermark(
            session: session.key, publisher: ObjectIdentifier(publisher), now: core.now, into: &actions)
        apply(&actions, core: core)
        if publisher.isReadingPausedByCore, session.outbound.isAboveHaltWatermark {
            publisher.haltDecodingByCore()
        }
    }

    /// `session` acknowledged something: it is draining; resume its publishers one at a time below the high
    /// watermark, and all of them at the low watermark.
    func noteProgress(of session: BrokerSession, core: BrokerCore) {
        // Optional chaining, not `guard let`: no copy of the state machine on every acknowledgement.
        guard state?.isIdle == false else { return }
        let level: PublisherBackpressure<ObjectIdentifier, SessionKey>.QueueLevel =
            session.outbound.isBelowLowWatermark
            ? .belowLowWatermark : session.outbound.isAboveHighWatermark ? .aboveHighWatermark : .belowHighWatermark
        // Progress is timed per read batch (`now` is the batch's start), so once a batch reported it, a later
        // acknowledgement in the same batch only has news when it took the queue below a watermark: below the high
        // one (resuming one publisher) once per batch, down to the low one (resuming all) every time.
        let now = core.now
        if core.isInPipelineRead, session.progressNotedAt == now {
            switch level {
            case .aboveHighWatermark: return
            case .belowHighWatermark: if session.drainNotedAt == now { return }
            case .belowLowWatermark: break
            }
        }
        session.progressNotedAt = now
        if level == .belowHighWatermark { session.drainNotedAt = now }
        var actions = takeActions()
        state?.progress(session: session.key, level: level, now: now, into: &actions)
        apply(&actions, core: core)
    }

    /// `session` lost its connection: it holds no publisher back any more.
    func sessionWentOffline(_ session: BrokerSession, core: BrokerCore) {
        guard state?.isIdle == false else { return }
        var actions = state?.sessionGone(session.key) ?? []
        apply(&actions, core: core)
    }

    /// `connection` closed: it is no longer paused.
    func connectionClosed(_ connection: BrokerConnectionHandler) {
        state?.connectionClosed(ObjectIdentifier(connection))
    }

    /// Stops the stall timer for good (shutdown).
    func stop() {
        isStopped = true
        stallCheckTask?.cancel()
        stallCheckTask = nil
    }

    private func takeActions() -> [Action] {
        var actions: [Action] = []
        swap(&actions, &spareActions)
        return actions
    }

    /// Carries out `actions` and hands the emptied array back for reuse.
    private func apply(_ actions: inout [Action], core: BrokerCore) {
        for action in actions {
            switch action {
            case .pause(let id):
                core.connections[id]?.pauseReadingByCore()
            case .resume(let id):
                core.connections[id]?.resumeReadingByCore()
            }
        }
        actions.removeAllKeepingStorage()
        swap(&actions, &spareActions)
        scheduleStallCheck(core: core)
    }

    /// Arms the timer that releases the publishers of sessions that stopped acknowledging.
    private func scheduleStallCheck(core: BrokerCore) {
        guard stallCheckTask == nil, !isStopped, let deadline = state?.nextStallDeadline else { return }
        // Strong captures, as in every timer of the core (see ``ConnectionTimers``).
        stallCheckTask = core.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            self.stallCheckTask = nil
            var actions = self.state?.checkStalls(now: core.eventLoop.now) ?? []
            if !actions.isEmpty {
                core.logger.notice("back-pressure released: a congested session stopped acknowledging")
            }
            self.apply(&actions, core: core)
        }
    }
}
