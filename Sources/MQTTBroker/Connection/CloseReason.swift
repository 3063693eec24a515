import MQTTCore

/// Why the broker closed, or saw the end of, a client connection. Decides the log level and whether the will is
/// published; every close path goes through this one type.
enum CloseReason: Sendable, Hashable, CustomStringConvertible {
    /// The client sent DISCONNECT: the will is discarded (MQTT-3.14.4-3).
    case clientDisconnected
    /// An MQTT 5 client sent DISCONNECT with reason code 0x04: the will is published all the same.
    case clientDisconnectedWithWill
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
        case .clientDisconnectedWithWill, .connectionLost, .malformedPacket, .protocolViolation, .keepaliveExpired,
            .takenOver, .slowConsumer:
            return true
        }
    }

    /// The reason code of the DISCONNECT an MQTT 5 client is sent when the server closes its connection (MQTT 5.0
    /// 4.13.2 and table 3-10); nil when the client ended it, or the socket is already gone, or CONNACK said it.
    /// This is the one place protocol errors become reason codes.
    var disconnectReasonCode: MQTTReasonCode? {
        switch self {
        case .clientDisconnected, .clientDisconnectedWithWill, .connectionLost, .connectTimeout, .connectRejected:
            return nil
        case .malformedPacket(let error): return error.reason
        case .protocolViolation(let violation): return violation.reasonCode
        case .keepaliveExpired: return .keepAliveTimeout
        case .takenOver: return .sessionTakenOver
        case .serverShutdown: return .serverShuttingDown
        case .slowConsumer: return .quotaExceeded
        }
    }

    var description: String {
        switch self {
        case .clientDisconnected: return "client sent DISCONNECT"
        case .clientDisconnectedWithWill: return "client sent DISCONNECT asking for its will"
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
enum ProtocolViolation: Error, Sendable, Hashable, CustomStringConvertible {
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
    /// An MQTT 5 Topic Alias of 0 or above the Topic Alias Maximum the broker announced (MQTT-3.3.2-8, -9).
    case topicAliasOutOfRange(UInt16)
    /// An MQTT 5 PUBLISH with an empty topic and an alias the connection never set (MQTT 5.0 3.3.2.3.4).
    case unknownTopicAlias(UInt16)
    /// More unacknowledged QoS 2 PUBLISHes than the Receive Maximum the broker announced (MQTT-3.3.4-7).
    case receiveMaximumExceeded(Int)
    /// An AUTH packet, though no enhanced authentication was started (MQTT 5.0 4.12).
    case unexpectedAuth
    /// A DISCONNECT setting a Session Expiry Interval after CONNECT set none (MQTT-3.14.2-2).
    case sessionExpiryAfterZero
    /// No Local on a shared subscription (MQTT-3.8.3-4).
    case noLocalOnSharedSubscription
    /// A retained PUBLISH after the CONNACK said Retain Available 0 (MQTT-3.2.2-14).
    case retainNotSupported

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
        case .topicAliasOutOfRange(let alias): return "topic alias \(alias) outside 1...max_topic_alias"
        case .unknownTopicAlias(let alias): return "topic alias \(alias) was never set"
        case .receiveMaximumExceeded(let count): return "\(count) QoS 2 messages unreleased, above the receive maximum"
        case .unexpectedAuth: return "AUTH without enhanced authentication"
        case .sessionExpiryAfterZero: return "DISCONNECT set a session expiry after CONNECT set none"
        case .noLocalOnSharedSubscription: return "No Local on a shared subscription"
        case .retainNotSupported: return "retained PUBLISH while retain_available is false"
        }
    }

    /// The MQTT 5 reason code the DISCONNECT for this violation carries.
    var reasonCode: MQTTReasonCode {
        switch self {
        case .tooManyTopicLevels: return .malformedPacket  // hostile input, as mosquitto reports it
        case .qosNotSupported: return .qosNotSupported
        case .invalidTopicName: return .topicNameInvalid
        case .topicAliasOutOfRange: return .topicAliasInvalid
        case .receiveMaximumExceeded: return .receiveMaximumExceeded
        case .retainNotSupported: return .retainNotSupported
        case .firstPacketNotConnect, .secondConnect, .serverOnlyPacket, .missingPacketID, .acknowledgementOutOfFlow,
            .unknownTopicAlias, .unexpectedAuth, .sessionExpiryAfterZero, .noLocalOnSharedSubscription:
            return .protocolError
        }
    }
}
