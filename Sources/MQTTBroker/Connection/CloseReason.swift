import MQTTCore

/// Why the broker closed, or saw the end of, a client connection. Decides the log level and whether the will is
/// published; every close path goes through this one type.
enum CloseReason: Sendable, Hashable, CustomStringConvertible {
    /// The client sent DISCONNECT: the will is discarded (MQTT-3.14.4-3).
    case clientDisconnected
    /// The socket closed or failed without DISCONNECT.
    case connectionLost
    /// The client sent bytes the codec rejected (malformed packet, packet too large, bad protocol level).
    case malformedPacket(MQTTCodecError)
    /// The client broke a protocol rule the codec cannot see (packet order, second CONNECT, ...).
    case protocolViolation(ProtocolViolation)
    /// Nothing arrived within 1.5 times the keepalive (MQTT-3.1.2-24).
    case keepaliveExpired
    /// No CONNECT arrived within the configured connect timeout.
    case connectTimeout
    /// CONNECT was refused with this return code (CONNACK already sent when the code allows it).
    case connectRejected(ConnectReturnCode)
    /// Another connection connected with the same client identifier (MQTT-3.1.4-2).
    case takenOver
    /// The broker is shutting down: nothing more is published, not even wills.
    case serverShutdown
    /// The client did not read its output: pending bytes stayed above `max_pending_output_bytes` for
    /// `slow_consumer_timeout`, or passed twice the bound.
    case slowConsumer

    /// Whether the will of the connection must be published (MQTT-3.1.2-8): any end other than DISCONNECT,
    /// except broker shutdown, where nothing extra is published.
    var publishesWill: Bool {
        switch self {
        case .clientDisconnected, .serverShutdown, .connectRejected, .connectTimeout:
            return false
        case .connectionLost, .malformedPacket, .protocolViolation, .keepaliveExpired, .takenOver, .slowConsumer:
            return true
        }
    }

    var description: String {
        switch self {
        case .clientDisconnected: return "client sent DISCONNECT"
        case .connectionLost: return "connection lost"
        case .malformedPacket(let error): return "malformed packet: \(error) (reason code 0x\(String(error.reasonCode, radix: 16)))"
        case .protocolViolation(let violation): return "protocol violation: \(violation)"
        case .keepaliveExpired: return "keepalive expired"
        case .connectTimeout: return "no CONNECT within the connect timeout"
        case .connectRejected(let code): return "CONNECT rejected with return code \(code.rawValue)"
        case .takenOver: return "client identifier taken over by a new connection"
        case .serverShutdown: return "broker shutting down"
        case .slowConsumer: return "slow consumer: output not read (max_pending_output_bytes, slow_consumer_timeout)"
        }
    }
}

/// Protocol rules broken by a client that the codec cannot detect on its own.
enum ProtocolViolation: Sendable, Hashable, CustomStringConvertible {
    /// The first packet was not CONNECT (MQTT-3.1.0-1).
    case firstPacketNotConnect(PacketType)
    /// A second CONNECT on an established connection (MQTT-3.1.0-2).
    case secondConnect
    /// A packet only a server may send (CONNACK, SUBACK, UNSUBACK, PINGRESP).
    case serverOnlyPacket(PacketType)
    /// A PUBLISH topic name the broker refuses (e.g. invalid UTF-8 or wildcards).
    case invalidTopicName(String)
    /// A PUBLISH with a QoS above what the broker supports.
    case qosNotSupported(QoS)
    /// A QoS 1/2 PUBLISH without packet identifier (the codec should never let one through).
    case missingPacketID
    /// An acknowledgement that does not fit its delivery's flow (PUBREC or PUBCOMP for a QoS 1 delivery, PUBACK for
    /// a QoS 2 one, PUBCOMP before PUBREL).
    case acknowledgementOutOfFlow(OutboundAcknowledgement, packetID: UInt16)
    /// A topic name or filter with more levels than `max_topic_levels`: hostile input, as mosquitto treats it.
    case tooManyTopicLevels(Int)

    var description: String {
        switch self {
        case .firstPacketNotConnect(let type): return "first packet was \(type), not CONNECT"
        case .secondConnect: return "second CONNECT"
        case .serverOnlyPacket(let type): return "client sent server-only packet \(type)"
        case .invalidTopicName(let topic): return "invalid topic name \(topic.debugDescription)"
        case .qosNotSupported(let qos): return "PUBLISH with unsupported \(qos)"
        case .missingPacketID: return "QoS 1/2 PUBLISH without packet identifier"
        case .acknowledgementOutOfFlow(let acknowledgement, let packetID):
            return "\(acknowledgement) for packet id \(packetID) does not fit that delivery's flow"
        case .tooManyTopicLevels(let levels): return "topic with \(levels) levels, more than max_topic_levels"
        }
    }
}
