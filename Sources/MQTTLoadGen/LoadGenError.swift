/// Why a load generator run could not be carried out (lost messages are results, not errors).
public enum LoadGenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration is inconsistent (for example zero publishers, or pairs with unequal counts).
    case invalidConfiguration(String)
    /// A TCP connection to the broker could not be opened.
    case connectFailed(host: String, port: Int, reason: String)
    /// The broker answered CONNECT with a non-zero return code.
    case connectionRefused(returnCode: UInt8)
    /// The broker refused a subscription (SUBACK return code 0x80).
    case subscribeRejected(topicFilter: String)
    /// The broker sent bytes that are not a valid MQTT 3.1.1 packet.
    case malformedPacket(String)
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
        case .connectionFailed(let why): return "connection failed: \(why)"
        case .closedDuringHandshake: return "broker closed the connection during the MQTT handshake"
        case .timedOut(let phase, let seconds): return "\(phase) did not finish within \(seconds) s"
        case .brokerMemoryUnreadable(let pid): return "cannot read VmRSS from /proc/\(pid)/status"
        case .brokerUsageUnreadable(let pid): return "cannot read CPU times from /proc/\(pid)/stat"
        }
    }
}
