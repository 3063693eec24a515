import NIOCore

/// Publishes the broker's statistics as retained `$SYS/broker/...` messages (``SysTopics``) every `sys_interval`,
/// through the core's own routing. Confined to the core's event loop (hence its `@exclusivity(unchecked)`
/// property, see ``BrokerCore``).
final class SysPublisher {
    /// `sys_interval`; nil or zero: no `$SYS` at all.
    let interval: TimeAmount?
    @exclusivity(unchecked) private var task: Scheduled<Void>?

    init(interval: TimeAmount?) {
        self.interval = interval
    }

    /// Publishes now, then every interval, until ``stop()``.
    func start(for core: BrokerCore) {
        core.eventLoop.assertInEventLoop()
        guard let interval, interval.nanoseconds > 0, task == nil else { return }
        publish(for: core)
        schedule(for: core, in: interval)
    }

    private func schedule(for core: BrokerCore, in interval: TimeAmount) {
        // The core is captured strongly, as in every timer of the core (see ``ConnectionTimers``); ``stop()`` at
        // shutdown ends the cycle.
        task = core.eventLoop.assumeIsolated().scheduleTask(in: interval) { [self] in
            guard !core.isShuttingDown else { return }
            publish(for: core)
            schedule(for: core, in: interval)
        }
    }

    /// Publishes the current values once.
    func publish(for core: BrokerCore) {
        core.eventLoop.assertInEventLoop()
        guard !core.isShuttingDown else { return }
        for (topic, value) in SysTopics.values(of: core, now: core.eventLoop.now) {
            core.route(BrokerMessage(topic: topic, payload: ByteBuffer(string: value), qos: .atMostOnce, retain: true))
        }
        core.flushDirty()
    }

    /// Cancels the next publication.
    func stop() {
        task?.cancel()
        task = nil
    }
}
