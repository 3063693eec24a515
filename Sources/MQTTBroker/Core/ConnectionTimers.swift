import NIOCore

/// Connection deadlines (connect timeout, keepalive, parking checks): one ``DeadlineHeap`` for every connection of
/// the core and a single event-loop timer armed for the earliest, instead of one scheduled task per connection.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class ConnectionTimers {
    private let eventLoop: any EventLoop
    @exclusivity(unchecked) private var deadlines = DeadlineHeap<ObjectIdentifier>()
    @exclusivity(unchecked) private var timer: Scheduled<Void>?
    @exclusivity(unchecked) private var timerAt: NIODeadline?
    @exclusivity(unchecked) private var isFiring = false
    @exclusivity(unchecked) private var isStopped = false

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// `connection`'s timer is due at `deadline`; any earlier entry of it becomes stale (see
    /// ``BrokerConnectionHandler/timerDeadline``).
    func arm(_ connection: BrokerConnectionHandler, at deadline: NIODeadline) {
        deadlines.insert(ObjectIdentifier(connection), at: deadline)
        if !isFiring {
            schedule(for: connection.core)
        }
    }

    /// Keeps the one timer armed at the earliest deadline (or earlier).
    private func schedule(for core: BrokerCore) {
        guard !isStopped, let earliest = deadlines.earliest else { return }
        if let timerAt, timerAt <= earliest { return }
        timer?.cancel()
        timerAt = earliest
        // The core is captured strongly, not weakly: one weak reference gives an object a side table for good, and
        // from then on every retain and release of the core (several per message) takes the runtime's slow path.
        // The cycle this makes (the core holds the task, the task holds the core) ends when the task runs, or at
        // ``stop()``, or when the event loop drops its tasks on shutdown.
        timer = eventLoop.assumeIsolated().scheduleTask(deadline: earliest) { [self] in
            self.timer = nil
            self.timerAt = nil
            self.fireDue(for: core)
        }
    }

    /// Fires every connection timer that is due, skipping stale entries, then re-arms for the next one.
    private func fireDue(for core: BrokerCore) {
        let now = eventLoop.now
        isFiring = true
        while let entry = deadlines.popDue(now: now) {
            guard let connection = core.connections[entry.id], connection.timerDeadline == entry.deadline else { continue }
            connection.timerFired(now: now)
        }
        isFiring = false
        schedule(for: core)
        core.flushDirty()
    }

    /// Stops the timer for good (shutdown).
    func stop() {
        isStopped = true
        timer?.cancel()
        timer = nil
        timerAt = nil
    }
}
