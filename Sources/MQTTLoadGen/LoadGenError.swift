import MQTTCore

/// Why a load generator run could not be carried out (lost messages are results, not errors).
public enum LoadGenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration is inconsistent (for example zero publishers, or pairs with unequal counts).
    case invalidConfiguration(String)
    /// A TCP connection to the broker could not be opened.
    case connectFailed(host: String, port: Int, reason: String)
    /// The broker answered CONNECT with a non-zero return code (MQTT 5: reason code).
    case connectionRefused(returnCode: UInt8)
    /// The broker refused a subscription (SUBACK return code 0x80).
    case subscribeRejected(topicFilter: String)
    /// The broker sent bytes that are not a valid packet of the run's protocol version.
    case malformedPacket(String)
    /// An MQTT 5 broker closed a connection with a DISCONNECT packet: its reason code and reason string, if any.
    case disconnectedByBroker(reasonCode: UInt8, reason: String?)
    /// Topic aliases were asked for but the broker's CONNACK grants no Topic Alias Maximum of at least 1 (its
    /// maximum, 0 when absent).
    case topicAliasesUnavailable(maximum: Int)
    /// An open connection failed (socket error).
    case connectionFailed(String)
    /// The broker closed a connection before its handshake (CONNACK, SUBACK) completed.
    case closedDuringHandshake
    /// A bounded phase (connecting, subscribing) did not finish in time.
    case timedOut(phase: String, seconds: Double)
    /// `/proc/PID/status` could not be read or has no VmRSS line.
    case brokerMemoryUnreadable(pid: Int32)
    /// `/proc/PID/stat` could not be read or parsed (the broker's CPU time).
    case brokerUsageUnreadable(pid: Int32)

    public var description: String {
        switch self {
        case .invalidConfiguration(let why): return "invalid configuration: \(why)"
        case .connectFailed(let host, let port, let reason): return "cannot connect to \(host):\(port): \(reason)"
        case .connectionRefused(let code): return "broker refused the connection (CONNACK return code \(code))"
        case .subscribeRejected(let filter): return "broker rejected the subscription to \(filter)"
        case .malformedPacket(let why): return "malformed packet from broker: \(why)"
        case .disconnectedByBroker(let code, let reason):
            let name = MQTTReasonCode(rawValue: code).name(in: .disconnect) ?? "reason code"
            return "broker sent DISCONNECT: \(name) (0x\(String(code, radix: 16)))" + (reason.map { ": \($0)" } ?? "")
        case .topicAliasesUnavailable(let maximum):
            return "topic aliases requested, but the broker's CONNACK allows Topic Alias Maximum \(maximum) (at least 1 needed)"
        case .connectionFailed(let why): return "connection failed: \(why)"
        case .closedDuringHandshake: return "broker closed the connection during the MQTT handshake"
        case .timedOut(let phase, let seconds): return "\(phase) did not finish within \(seconds) s"
        case .brokerMemoryUnreadable(let pid): return "cannot read VmRSS from /proc/\(pid)/status"
        case .brokerUsageUnreadable(let pid): return "cannot read CPU times from /proc/\(pid)/stat"
        }
    }
}
