import DequeModule
import NIOCore

/// Publisher back-pressure: keeps fast publishers from overflowing the queue of a slower, online subscriber.
///
/// Policy (documented in `broker-config/mqttchat.conf`, key `backpressure_stall_ms`):
/// - When routing a QoS 1/2 message leaves an online session's queue above its high watermark (half of
///   `max_queued_messages` or `max_queued_bytes`), the publishing connection is *paused*: after the read batch in
///   progress the broker decodes its packets only up to the first PUBLISH, which waits with everything behind it
///   (a PUBREL, PINGREQ or acknowledgement before it is still answered), and stops reading its socket once a
///   little input waits (see ``BrokerConnectionHandler/pausedInputLimit``); TCP pushes back, and the publisher's
///   acknowledgements slow down instead of messages being dropped. Above three quarters of the limits the pause
///   applies to the batch in progress too, so a large batch cannot reach the limit.
/// - Paused publishers resume *one at a time* while the session drains between its watermarks: each report of
///   progress below the high watermark resumes the publisher paused longest. The session's queue then hovers at
///   the high watermark, and the broker interleaves one publisher's batch with the subscriber's acknowledgements,
///   instead of letting every publisher in at once when the queue is low (a convoy the subscriber waits behind).
///   Down at the low watermark (a quarter of the limits) every publisher it holds resumes.
/// - A session only holds publishers back while it makes progress: it must acknowledge something (PUBACK, PUBREC,
///   PUBCOMP) at least once per ``stallTimeout``. A session that stalls releases its publishers and exerts no
///   back-pressure until it acknowledges again; its queue then fills and drops as configured, counted.
/// - Offline sessions never exert back-pressure; a session that goes offline releases its publishers.
/// - A connection is never paused for its own session (it must keep reading its own acknowledgements).
///
/// A connection paused for several sessions resumes when the last of them releases it. Two connections that
/// publish into each other's congested sessions can hold each other for at most one stall timeout.
///
/// Pure value type returning actions; the time is passed in, so tests use a virtual clock.
struct PublisherBackpressure<Connection: Hashable & Sendable, Session: Hashable & Sendable>: Sendable {
    /// What the broker must do with a connection.
    enum Action: Sendable, Hashable {
        /// Stop reading from this connection.
        case pause(Connection)
        /// Read from this connection again.
        case resume(Connection)
    }

    /// Where a congested session's queue stands when it reports progress.
    enum QueueLevel: Sendable, Hashable {
        /// Down to the low watermark: every publisher paused for the session resumes.
        case belowLowWatermark
        /// Below the high watermark: the publisher paused longest resumes.
        case belowHighWatermark
        /// Above the high watermark: its publishers stay paused.
        case aboveHighWatermark
    }

    /// A session whose queue went above its high watermark.
    private struct Congestion: Sendable {
        /// The publishers paused on its behalf.
        var paused: Set<Connection> = []
        /// The same publishers in the order they were paused: the next to resume first.
        var resumeOrder: Deque<Connection> = []
        /// The last time it acknowledged something (or became congested).
        var lastProgress: NIODeadline
        /// Whether it made no progress for the stall timeout (it holds no one back until it acknowledges again).
        var stalled = false
    }

    /// How long a congested session may go without acknowledging before it stops holding publishers back.
    let stallTimeout: TimeAmount

    /// The sessions a connection is paused for: nearly always one, held without allocating a set.
    private enum Holders: Sendable {
        case one(Session)
        case several(Set<Session>)

        func adding(_ session: Session) -> Holders {
            switch self {
            case .one(let held):
                return held == session ? self : .several([held, session])
            case .several(var sessions):
                sessions.insert(session)
                return .several(sessions)
            }
        }

        /// The holders left once `session` lets go; nil when none is left.
        func removing(_ session: Session) -> Holders? {
            switch self {
            case .one(let held):
                return held == session ? nil : self
            case .several(var sessions):
                sessions.remove(session)
                if sessions.count > 1 { return .several(sessions) }
                return sessions.first.map { .one($0) }
            }
        }

        var sessions: [Session] {
            switch self {
            case .one(let held): [held]
            case .several(let sessions): Array(sessions)
            }
        }
    }

    private var congested: [Session: Congestion] = [:]
    /// Connection -> the sessions it is paused for.
    private var pausedFor: [Connection: Holders] = [:]
    /// Pauses since the start (for `$SYS`).
    private(set) var pauseCount: UInt64 = 0

    init(stallTimeout: TimeAmount) {
        self.stallTimeout = stallTimeout
    }

    /// Whether no session is congested (the cheap check on the hot path).
    var isIdle: Bool { congested.isEmpty }

    /// The number of connections currently paused.
    var pausedConnectionCount: Int { pausedFor.count }

    /// Whether `connection` is currently paused.
    func isPaused(_ connection: Connection) -> Bool { pausedFor[connection] != nil }

    /// The earliest time a congested session that is not stalled yet would be declared stalled.
    var nextStallDeadline: NIODeadline? {
        congested.values.lazy.filter { !$0.stalled && !$0.paused.isEmpty }.map { $0.lastProgress + stallTimeout }.min()
    }

    /// Routing a message from `publisher` left the online `session`'s queue above its high watermark at `now`.
    /// Appends what to do to `actions` (the caller reuses one array: this runs for every message routed into a
    /// congested queue).
    mutating func queueAboveHighWatermark(
        session: Session, publisher: Connection, now: NIODeadline, into actions: inout [Action]
    ) {
        // The congestion is updated in place: a copy taken out of the dictionary would make the insert below copy
        // its set as well (and the `default:` subscript boxes its default value on every call). A session already
        // congested, the common case here, is looked up once.
        let index: [Session: Congestion].Index
        if let found = congested.index(forKey: session) {
            index = found
        } else {
            congested[session] = Congestion(lastProgress: now)
            guard let added = congested.index(forKey: session) else { return }
            index = added
        }
        let (stalled, inserted) = Self.note(publisher, in: &congested.values[index], now: now, stallTimeout: stallTimeout)
        if stalled {
            release(session, keepingCongestion: true, into: &actions)
            return
        }
        guard inserted else { return }
        guard let holders = pausedFor[publisher] else {
            pausedFor[publisher] = .one(session)
            pauseCount += 1
            actions.append(.pause(publisher))
            return
        }
        pausedFor[publisher] = holders.adding(session)
    }

    /// ``queueAboveHighWatermark(session:publisher:now:into:)`` returning its actions (for tests).
    mutating func queueAboveHighWatermark(session: Session, publisher: Connection, now: NIODeadline) -> [Action] {
        var actions: [Action] = []
        queueAboveHighWatermark(session: session, publisher: publisher, now: now, into: &actions)
        return actions
    }

    /// Records `publisher` as paused for `congestion`, unless the congested session went quiet before anyone was
    /// paused for it (it is then stalled: no back-pressure until it acknowledges again).
    private static func note(
        _ publisher: Connection, in congestion: inout Congestion, now: NIODeadline, stallTimeout: TimeAmount
    ) -> (stalled: Bool, inserted: Bool) {
        if !congestion.stalled, now - congestion.lastProgress >= stallTimeout {
            congestion.stalled = true
        }
        guard !congestion.stalled else { return (true, false) }
        guard congestion.paused.insert(publisher).inserted else { return (false, false) }
        congestion.resumeOrder.append(publisher)
        return (false, true)
    }

    /// `session` acknowledged something at `now`, leaving its queue at `level`.
    ///
    /// Called on acknowledgements while any session is congested, so it looks `session` up once, and reads the
    /// clock only for a congested session.
    mutating func progress(
        session: Session, level: QueueLevel, now: @autoclosure () -> NIODeadline, into actions: inout [Action]
    ) {
        guard let index = congested.index(forKey: session) else { return }
        if level == .belowLowWatermark {
            release(session, keepingCongestion: false, into: &actions)
            return
        }
        congested.values[index].lastProgress = now()
        congested.values[index].stalled = false
        guard level == .belowHighWatermark else { return }
        while let next = congested.values[index].resumeOrder.popFirst() {
            guard congested.values[index].paused.remove(next) != nil else { continue }
            unpause(next, for: session, into: &actions)
            return
        }
    }

    /// ``progress(session:level:now:into:)`` returning its actions (for tests).
    mutating func progress(session: Session, level: QueueLevel, now: NIODeadline) -> [Action] {
        var actions: [Action] = []
        progress(session: session, level: level, now: now, into: &actions)
        return actions
    }

    /// `session` went offline or was removed: it holds no one back any more.
    mutating func sessionGone(_ session: Session) -> [Action] {
        var actions: [Action] = []
        release(session, keepingCongestion: false, into: &actions)
        return actions
    }

    /// `connection` closed: forget it (nothing to resume).
    mutating func connectionClosed(_ connection: Connection) {
        guard let holders = pausedFor.removeValue(forKey: connection) else { return }
        for session in holders.sessions {
            congested[session]?.paused.remove(connection)
            congested[session]?.resumeOrder.removeAll { $0 == connection }
        }
    }

    /// The stall timer fired at `now`: sessions that made no progress for the stall timeout release their
    /// publishers.
    mutating func checkStalls(now: NIODeadline) -> [Action] {
        var actions: [Action] = []
        for (session, congestion) in congested where !congestion.stalled && now - congestion.lastProgress >= stallTimeout {
            congested[session]?.stalled = true
            release(session, keepingCongestion: true, into: &actions)
        }
        return actions
    }

    private mutating func release(_ session: Session, keepingCongestion: Bool, into actions: inout [Action]) {
        guard let congestion = congested[session] else { return }
        if keepingCongestion {
            congested[session]?.paused = []
            congested[session]?.resumeOrder = []
        } else {
            congested[session] = nil
        }
        for connection in congestion.paused {
            unpause(connection, for: session, into: &actions)
        }
    }

    /// `session` no longer holds `connection` back: `.resume` if no other session does.
    private mutating func unpause(_ connection: Connection, for session: Session, into actions: inout [Action]) {
        guard let holders = pausedFor[connection] else { return }
        if let left = holders.removing(session) {
            pausedFor[connection] = left
        } else {
            pausedFor[connection] = nil
            actions.append(.resume(connection))
        }
    }
}
