public import MQTTCore

/// Errors thrown by ``MQTTClient``.
public enum MQTTClientError: Error, Sendable, Hashable {
    /// The broker does not speak the requested protocol version (CONNACK 1, or MQTT 5 reason 0x84).
    case unacceptableProtocolVersion
    /// The broker rejected the client identifier (CONNACK 2, or MQTT 5 reason 0x85).
    case identifierRejected
    /// The broker is unavailable (CONNACK 3, or MQTT 5 reasons 0x88 / 0x89).
    case serverUnavailable
    /// The user name or password was wrong (CONNACK 4, or MQTT 5 reason 0x86).
    case badUsernameOrPassword
    /// The client is not authorised (CONNACK 5, or MQTT 5 reason 0x87 in CONNACK, PUBACK/PUBREC or SUBACK).
    case notAuthorized
    /// Nothing accepted the TCP connection at the broker address (ECONNREFUSED).
    case connectionRefused
    /// The broker host could not be reached (no route, network down, or TCP timeout).
    case hostUnreachable
    /// The broker host name could not be resolved.
    case dnsFailure(host: String)
    /// The TLS handshake failed, for example because the certificate authority does not match.
    case tlsHandshakeFailed(String)
    /// The operation needs a connection and there is none (or the client was disconnected meanwhile).
    case notConnected
    /// The broker refused the subscription to this filter (SUBACK return code 0x80).
    case subscriptionRefused(filter: String)
    /// More QoS 1/2 publishes were attempted while offline than `offlineQueueLimit` allows.
    case offlineQueueFull
    /// A topic name or topic filter is not valid MQTT.
    case invalidTopic(String)
    /// An operation did not complete in time.
    case timeout
    /// The broker violated the protocol, or answered with something this client does not understand.
    case protocolError(String)
    /// The configuration is unusable (for example an empty client identifier or unreadable TLS files).
    case invalidConfiguration(String)
    /// The broker answered with this MQTT 5 failure reason code (≥ 0x80; in PUBACK/PUBREC, SUBACK, CONNACK or a
    /// DISCONNECT it sent), with its Reason String if it sent one. 0x87 is reported as ``notAuthorized`` instead.
    case reasonCode(MQTTReasonCode, reasonString: String?)
    /// The feature needs ``MQTTClientProtocolVersion/v5``; the associated text names it.
    case mqtt5Required(String)
    /// `request` was called while `maxOutstandingRequests` requests were waiting for their responses.
    case tooManyOutstandingRequests(limit: Int)
    /// `respond(to:)` was given a message without a Response Topic: it is not a request.
    case noResponseTopic
    /// Any other libmosquitto error, with its code and `mosquitto_strerror` text.
    case mosquitto(code: Int32, message: String)
}

extension MQTTClientError {
    /// The error for a failing MQTT 5 reason code (≥ 0x80) answered to an operation.
    static func failure(reasonCode code: UInt8, reasonString: String?) -> MQTTClientError {
        code == MQTTReasonCode.notAuthorized.rawValue
            ? .notAuthorized : .reasonCode(MQTTReasonCode(rawValue: code), reasonString: reasonString)
    }
}
