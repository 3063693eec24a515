import NIOCore

/// Connection deadlines (connect timeout, keepalive): the core keeps them in one ``DeadlineHeap`` and arms a single
/// event-loop timer for the earliest, instead of one scheduled task per connection.
extension BrokerCore {
    /// `connection`'s timer is due at `deadline`; any earlier entry of it becomes stale (see
    /// ``BrokerConnectionHandler/timerDeadline``).
    func armConnectionTimer(_ connection: BrokerConnectionHandler, at deadline: NIODeadline) {
        connectionDeadlines.insert(ObjectIdentifier(connection), at: deadline)
        if !isFiringDeadlines {
            scheduleDeadlineTimer()
        }
    }

    /// Keeps the one timer armed at the earliest deadline (or earlier).
    private func scheduleDeadlineTimer() {
        guard !isShuttingDown, let earliest = connectionDeadlines.earliest else { return }
        if let armedAt = deadlineTimerAt, armedAt <= earliest { return }
        deadlineTimer?.cancel()
        deadlineTimerAt = earliest
        // `self` is captured strongly, not weakly: one weak reference gives an object a side table for good, and
        // from then on every retain and release of the core (several per message) takes the runtime's slow path.
        // The cycle this makes (the core holds
        // the task, the task holds the core) ends when the task runs, or at `shutdown()`, which cancels all three
        // timers of the core, or when the event loop drops its tasks on shutdown.
        deadlineTimer = eventLoop.assumeIsolated().scheduleTask(deadline: earliest) { [self] in
            self.deadlineTimer = nil
            self.deadlineTimerAt = nil
            self.fireDueDeadlines()
        }
    }

    /// Fires every connection timer that is due, skipping stale entries, then re-arms for the next one.
    private func fireDueDeadlines() {
        let now = eventLoop.now
        isFiringDeadlines = true
        while let entry = connectionDeadlines.popDue(now: now) {
            guard let connection = connections[entry.id], connection.timerDeadline == entry.deadline else { continue }
            connection.timerFired(now: now)
        }
        isFiringDeadlines = false
        scheduleDeadlineTimer()
        flushDirty()
    }

    /// Stops the deadline timer (shutdown).
    func cancelDeadlineTimer() {
        deadlineTimer?.cancel()
        deadlineTimer = nil
        deadlineTimerAt = nil
    }
}
