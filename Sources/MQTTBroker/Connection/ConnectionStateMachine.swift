import MQTTCore
import NIOCore

/// The life cycle of one client connection: waiting for CONNECT (bounded by the connect timeout), connected
/// (bounded by 1.5 times the keepalive), closed. Pure value type; the current time is passed in by the caller
/// (the event loop's clock in production, any value in tests), so tests never sleep.
struct ConnectionStateMachine: Sendable {
    private enum State: Sendable {
        case awaitingConnect(deadline: NIODeadline)
        case connected(keepAlive: TimeAmount?, lastActivity: NIODeadline)
        case closed
    }

    /// What to do with a received packet.
    enum PacketVerdict: Sendable, Hashable {
        /// Process it.
        case process
        /// Close the connection for this reason.
        case close(CloseReason)
        /// The connection is already closing: drop it silently.
        case ignore
    }

    /// What to do when the connection's timer fires.
    enum TimerVerdict: Sendable, Hashable {
        /// Nothing is due yet: fire again at this deadline.
        case rearm(at: NIODeadline)
        /// Close the connection for this reason.
        case close(CloseReason)
        /// No timer is needed any more.
        case stop
    }

    private var state: State

    /// A connection accepted at `now` that must send CONNECT within `connectTimeout`.
    init(acceptedAt now: NIODeadline, connectTimeout: TimeAmount) {
        state = .awaitingConnect(deadline: now + connectTimeout)
    }

    /// Whether CONNECT has been accepted and the connection is not closed.
    var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Whether the connection has not been closed yet.
    var isOpen: Bool {
        if case .closed = state { return false }
        return true
    }

    /// When the last packet was received (CONNECT's acceptance at first); nil unless connected.
    var lastActivity: NIODeadline? {
        if case .connected(_, let lastActivity) = state { return lastActivity }
        return nil
    }

    /// The deadline the timer should first fire at.
    var nextDeadline: NIODeadline? {
        switch state {
        case .awaitingConnect(let deadline): return deadline
        case .connected(let keepAlive?, let lastActivity): return lastActivity + keepAlive
        case .connected(nil, _), .closed: return nil
        }
    }

    /// A packet of `type` arrived at `now`: checks the packet order rules and records the activity.
    mutating func packetReceived(_ type: PacketType, now: NIODeadline) -> PacketVerdict {
        switch state {
        case .closed:
            return .ignore
        case .awaitingConnect:
            return type == .connect ? .process : .close(.protocolViolation(.firstPacketNotConnect(type)))
        case .connected(let keepAlive, _):
            switch type {
            case .connect:
                return .close(.protocolViolation(.secondConnect))
            case .connack, .suback, .unsuback, .pingresp, .auth:
                return .close(.protocolViolation(.serverOnlyPacket(type)))
            case .publish, .puback, .pubrec, .pubrel, .pubcomp, .subscribe, .unsubscribe, .pingreq, .disconnect:
                state = .connected(keepAlive: keepAlive, lastActivity: now)
                return .process
            }
        }
    }

    /// CONNECT was accepted at `now` with this keepalive (seconds, 0 = none). The broker closes the connection
    /// after one and a half keepalive periods without a packet (MQTT-3.1.2-24).
    mutating func connectAccepted(keepAliveSeconds: UInt16, now: NIODeadline) {
        let grace: TimeAmount? = keepAliveSeconds == 0 ? nil : .milliseconds(Int64(keepAliveSeconds) * 1500)
        state = .connected(keepAlive: grace, lastActivity: now)
    }

    /// The connection timer fired at `now`.
    mutating func timerFired(now: NIODeadline) -> TimerVerdict {
        switch state {
        case .closed, .connected(nil, _):
            return .stop
        case .awaitingConnect(let deadline):
            if now >= deadline {
                state = .closed
                return .close(.connectTimeout)
            }
            return .rearm(at: deadline)
        case .connected(let keepAlive?, let lastActivity):
            let deadline = lastActivity + keepAlive
            if now >= deadline {
                state = .closed
                return .close(.keepaliveExpired)
            }
            return .rearm(at: deadline)
        }
    }

    /// The connection is closing; later packets and timers are ignored. Returns false when it was already closed.
    mutating func close() -> Bool {
        if case .closed = state { return false }
        state = .closed
        return true
    }
}
