import NIOCore

/// Publisher back-pressure: keeps fast publishers from overflowing the queue of a slower, online subscriber.
///
/// Policy (documented in `broker-config/mqttchat.conf`, key `backpressure_stall_ms`):
/// - When routing a QoS 1/2 message leaves an online session's queue above its high watermark (half of
///   `max_queued_messages` or `max_queued_bytes`), the publishing connection is *paused*: the broker stops reading
///   it, TCP pushes back, and the publisher's acknowledgements slow down instead of messages being dropped.
/// - The publishers paused for a session resume when its queue is down to the low watermark (a quarter of the
///   limits).
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

    /// A session whose queue went above its high watermark.
    private struct Congestion: Sendable {
        /// The publishers paused on its behalf.
        var paused: Set<Connection> = []
        /// The last time it acknowledged something (or became congested).
        var lastProgress: NIODeadline
        /// Whether it made no progress for the stall timeout (it holds no one back until it acknowledges again).
        var stalled = false
    }

    /// How long a congested session may go without acknowledging before it stops holding publishers back.
    let stallTimeout: TimeAmount

    private var congested: [Session: Congestion] = [:]
    /// Connection -> the sessions it is paused for.
    private var pausedFor: [Connection: Set<Session>] = [:]
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
    mutating func queueAboveHighWatermark(session: Session, publisher: Connection, now: NIODeadline) -> [Action] {
        var congestion = congested[session] ?? Congestion(lastProgress: now)
        if !congestion.stalled, now - congestion.lastProgress >= stallTimeout {
            // It went quiet before anyone was paused for it: no back-pressure until it acknowledges again.
            congestion.stalled = true
        }
        guard !congestion.stalled else {
            congested[session] = congestion
            return release(session, keepingCongestion: true)
        }
        let inserted = congestion.paused.insert(publisher).inserted
        congested[session] = congestion
        guard inserted else { return [] }
        let wasPaused = pausedFor[publisher] != nil
        pausedFor[publisher, default: []].insert(session)
        guard !wasPaused else { return [] }
        pauseCount += 1
        return [.pause(publisher)]
    }

    /// `session` acknowledged something at `now`; `belowLowWatermark` tells where its queue stands now.
    ///
    /// Called on every acknowledgement while any session is congested, so it looks `session` up once, and reads
    /// the clock only for a congested session.
    mutating func progress(session: Session, belowLowWatermark: Bool, now: @autoclosure () -> NIODeadline) -> [Action] {
        guard let index = congested.index(forKey: session) else { return [] }
        if belowLowWatermark {
            return release(session, keepingCongestion: false)
        }
        congested.values[index].lastProgress = now()
        congested.values[index].stalled = false
        return []
    }

    /// `session` went offline or was removed: it holds no one back any more.
    mutating func sessionGone(_ session: Session) -> [Action] {
        guard congested[session] != nil else { return [] }
        return release(session, keepingCongestion: false)
    }

    /// `connection` closed: forget it (nothing to resume).
    mutating func connectionClosed(_ connection: Connection) {
        guard let sessions = pausedFor.removeValue(forKey: connection) else { return }
        for session in sessions {
            congested[session]?.paused.remove(connection)
        }
    }

    /// The stall timer fired at `now`: sessions that made no progress for the stall timeout release their
    /// publishers.
    mutating func checkStalls(now: NIODeadline) -> [Action] {
        var actions: [Action] = []
        for (session, congestion) in congested where !congestion.stalled && now - congestion.lastProgress >= stallTimeout {
            congested[session]?.stalled = true
            actions += release(session, keepingCongestion: true)
        }
        return actions
    }

    private mutating func release(_ session: Session, keepingCongestion: Bool) -> [Action] {
        guard let congestion = congested[session] else { return [] }
        if keepingCongestion {
            congested[session]?.paused = []
        } else {
            congested[session] = nil
        }
        var actions: [Action] = []
        for connection in congestion.paused {
            guard var sessions = pausedFor[connection] else { continue }
            sessions.remove(session)
            if sessions.isEmpty {
                pausedFor[connection] = nil
                actions.append(.resume(connection))
            } else {
                pausedFor[connection] = sessions
            }
        }
        return actions
    }
}
