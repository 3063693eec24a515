import Foundation

/// The mailbox of the network thread: commands for it and the reconnect timer it waits for.
///
/// `@unchecked Sendable`: all mutable state is only read or written while `condition` is locked.
final class LoopControl: @unchecked Sendable {
    /// Work the network thread performs between turns of its socket loop (``SocketPoller``).
    enum Command: Sendable {
        /// Open the connection (`mosquitto_connect`).
        case connect
        /// Send DISCONNECT (`mosquitto_disconnect`).
        case disconnect
        /// The reconnect timer of this generation expired.
        case reconnectTimerFired(generation: Int)
        /// Leave the loop and destroy the handle.
        case stop
    }

    private let condition = NSCondition()
    private var commands: [Command] = []
    private var timer: (deadline: ContinuousClock.Instant, generation: Int)?
    private var stopping = false

    /// Queues a command and wakes the thread if it waits.
    func send(_ command: Command) {
        condition.lock()
        if case .stop = command { stopping = true } else { commands.append(command) }
        condition.signal()
        condition.unlock()
    }

    /// Arms the reconnect timer (replacing any earlier one).
    func schedule(after delay: Duration, generation: Int) {
        condition.lock()
        timer = (ContinuousClock.now + delay, generation)
        condition.signal()
        condition.unlock()
    }

    /// The next thing to do. With `wait`, blocks until there is a command or the timer expires; without, returns
    /// `nil` at once when there is nothing.
    func next(wait: Bool) -> Command? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stopping { return .stop }
            if !commands.isEmpty { return commands.removeFirst() }
            let now = ContinuousClock.now
            if let timer, timer.deadline <= now {
                self.timer = nil
                return .reconnectTimerFired(generation: timer.generation)
            }
            guard wait else { return nil }
            let untilTimer = timer.map { now.duration(to: $0.deadline) } ?? .seconds(1)
            let seconds = Double(untilTimer.components.seconds) + Double(untilTimer.components.attoseconds) * 1e-18
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(seconds, 1)))
        }
    }
}
