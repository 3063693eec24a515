/// An MQTT 5 reason code (MQTT 5.0 section 2.4, table 2-6): the outcome a CONNACK, PUBACK, PUBREC, PUBREL,
/// PUBCOMP, SUBACK, UNSUBACK, DISCONNECT or AUTH reports.
///
/// A struct over the wire byte rather than an enum, because the spec gives one value several names depending on
/// the packet (0x00 is Success, Normal disconnection and Granted QoS 0) and because a decoded byte is checked
/// against the packet it arrived in (``isValid(in:)``), not against one global list.
public struct MQTTReasonCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public var rawValue: UInt8

    /// Wraps a wire byte; any value, including ones the spec does not define.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Whether this code reports a failure (0x80 and above, MQTT 5.0 section 2.4).
    public var isFailure: Bool { rawValue >= 0x80 }

    // The named codes are computed, not stored: a stored static is reached through a lazy-initialisation check on
    // every use, and every decoded 3.1.1 acknowledgement takes `success` (see `MQTTProperties.none`).

    // MARK: Codes below 0x80 (success)

    /// 0x00 Success (CONNACK, PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK, AUTH).
    public static var success: MQTTReasonCode { MQTTReasonCode(rawValue: 0x00) }
    /// 0x00 Normal disconnection (DISCONNECT).
    public static var normalDisconnection: MQTTReasonCode { MQTTReasonCode(rawValue: 0x00) }
    /// 0x00 Granted QoS 0 (SUBACK).
    public static var grantedQoS0: MQTTReasonCode { MQTTReasonCode(rawValue: 0x00) }
    /// 0x01 Granted QoS 1 (SUBACK).
    public static var grantedQoS1: MQTTReasonCode { MQTTReasonCode(rawValue: 0x01) }
    /// 0x02 Granted QoS 2 (SUBACK).
    public static var grantedQoS2: MQTTReasonCode { MQTTReasonCode(rawValue: 0x02) }
    /// 0x04 Disconnect with Will Message (DISCONNECT).
    public static var disconnectWithWillMessage: MQTTReasonCode { MQTTReasonCode(rawValue: 0x04) }
    /// 0x10 No matching subscribers (PUBACK, PUBREC).
    public static var noMatchingSubscribers: MQTTReasonCode { MQTTReasonCode(rawValue: 0x10) }
    /// 0x11 No subscription existed (UNSUBACK).
    public static var noSubscriptionExisted: MQTTReasonCode { MQTTReasonCode(rawValue: 0x11) }
    /// 0x18 Continue authentication (AUTH).
    public static var continueAuthentication: MQTTReasonCode { MQTTReasonCode(rawValue: 0x18) }
    /// 0x19 Re-authenticate (AUTH).
    public static var reAuthenticate: MQTTReasonCode { MQTTReasonCode(rawValue: 0x19) }

    // MARK: Failures

    /// 0x80 Unspecified error.
    public static var unspecifiedError: MQTTReasonCode { MQTTReasonCode(rawValue: 0x80) }
    /// 0x81 Malformed Packet.
    public static var malformedPacket: MQTTReasonCode { MQTTReasonCode(rawValue: 0x81) }
    /// 0x82 Protocol Error.
    public static var protocolError: MQTTReasonCode { MQTTReasonCode(rawValue: 0x82) }
    /// 0x83 Implementation specific error.
    public static var implementationSpecificError: MQTTReasonCode { MQTTReasonCode(rawValue: 0x83) }
    /// 0x84 Unsupported Protocol Version.
    public static var unsupportedProtocolVersion: MQTTReasonCode { MQTTReasonCode(rawValue: 0x84) }
    /// 0x85 Client Identifier not valid.
    public static var clientIdentifierNotValid: MQTTReasonCode { MQTTReasonCode(rawValue: 0x85) }
    /// 0x86 Bad User Name or Password.
    public static var badUserNameOrPassword: MQTTReasonCode { MQTTReasonCode(rawValue: 0x86) }
    /// 0x87 Not authorized.
    public static var notAuthorized: MQTTReasonCode { MQTTReasonCode(rawValue: 0x87) }
    /// 0x88 Server unavailable.
    public static var serverUnavailable: MQTTReasonCode { MQTTReasonCode(rawValue: 0x88) }
    /// 0x89 Server busy.
    public static var serverBusy: MQTTReasonCode { MQTTReasonCode(rawValue: 0x89) }
    /// 0x8A Banned.
    public static var banned: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8A) }
    /// 0x8B Server shutting down.
    public static var serverShuttingDown: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8B) }
    /// 0x8C Bad authentication method.
    public static var badAuthenticationMethod: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8C) }
    /// 0x8D Keep Alive timeout.
    public static var keepAliveTimeout: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8D) }
    /// 0x8E Session taken over.
    public static var sessionTakenOver: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8E) }
    /// 0x8F Topic Filter invalid.
    public static var topicFilterInvalid: MQTTReasonCode { MQTTReasonCode(rawValue: 0x8F) }
    /// 0x90 Topic Name invalid.
    public static var topicNameInvalid: MQTTReasonCode { MQTTReasonCode(rawValue: 0x90) }
    /// 0x91 Packet Identifier in use.
    public static var packetIdentifierInUse: MQTTReasonCode { MQTTReasonCode(rawValue: 0x91) }
    /// 0x92 Packet Identifier not found.
    public static var packetIdentifierNotFound: MQTTReasonCode { MQTTReasonCode(rawValue: 0x92) }
    /// 0x93 Receive Maximum exceeded.
    public static var receiveMaximumExceeded: MQTTReasonCode { MQTTReasonCode(rawValue: 0x93) }
    /// 0x94 Topic Alias invalid.
    public static var topicAliasInvalid: MQTTReasonCode { MQTTReasonCode(rawValue: 0x94) }
    /// 0x95 Packet too large.
    public static var packetTooLarge: MQTTReasonCode { MQTTReasonCode(rawValue: 0x95) }
    /// 0x96 Message rate too high.
    public static var messageRateTooHigh: MQTTReasonCode { MQTTReasonCode(rawValue: 0x96) }
    /// 0x97 Quota exceeded.
    public static var quotaExceeded: MQTTReasonCode { MQTTReasonCode(rawValue: 0x97) }
    /// 0x98 Administrative action.
    public static var administrativeAction: MQTTReasonCode { MQTTReasonCode(rawValue: 0x98) }
    /// 0x99 Payload format invalid.
    public static var payloadFormatInvalid: MQTTReasonCode { MQTTReasonCode(rawValue: 0x99) }
    /// 0x9A Retain not supported.
    public static var retainNotSupported: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9A) }
    /// 0x9B QoS not supported.
    public static var qosNotSupported: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9B) }
    /// 0x9C Use another server.
    public static var useAnotherServer: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9C) }
    /// 0x9D Server moved.
    public static var serverMoved: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9D) }
    /// 0x9E Shared Subscriptions not supported.
    public static var sharedSubscriptionsNotSupported: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9E) }
    /// 0x9F Connection rate exceeded.
    public static var connectionRateExceeded: MQTTReasonCode { MQTTReasonCode(rawValue: 0x9F) }
    /// 0xA0 Maximum connect time.
    public static var maximumConnectTime: MQTTReasonCode { MQTTReasonCode(rawValue: 0xA0) }
    /// 0xA1 Subscription Identifiers not supported.
    public static var subscriptionIdentifiersNotSupported: MQTTReasonCode { MQTTReasonCode(rawValue: 0xA1) }
    /// 0xA2 Wildcard Subscriptions not supported.
    public static var wildcardSubscriptionsNotSupported: MQTTReasonCode { MQTTReasonCode(rawValue: 0xA2) }

    /// The spec's name for this code in a packet of `type`, or nil when the code is not valid there.
    public func name(in type: PacketType) -> String? {
        guard isValid(in: type) else { return nil }
        switch (rawValue, type) {
        case (0x00, .disconnect): return "Normal disconnection"
        case (0x00, .suback): return "Granted QoS 0"
        default: return Self.names[rawValue]
        }
    }

    /// The spec's name (the first one for 0x00), or the hexadecimal value for an undefined code.
    public var description: String {
        let hex = "0x" + String(rawValue, radix: 16, uppercase: true)
        guard let name = Self.names[rawValue] else { return hex }
        return "\(hex) \(name)"
    }

    /// Whether MQTT 5.0 allows this code in a packet of `type` (the "MQTT Control Packets" column of table 2-6).
    /// PUBLISH, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, PINGRESP and CONNECT carry no reason code.
    public func isValid(in type: PacketType) -> Bool {
        guard let packets = Self.validity[rawValue] else { return false }
        return packets & (1 << type.rawValue) != 0
    }

    private static let names: [UInt8: String] = [
        0x00: "Success", 0x01: "Granted QoS 1", 0x02: "Granted QoS 2", 0x04: "Disconnect with Will Message",
        0x10: "No matching subscribers", 0x11: "No subscription existed", 0x18: "Continue authentication",
        0x19: "Re-authenticate", 0x80: "Unspecified error", 0x81: "Malformed Packet", 0x82: "Protocol Error",
        0x83: "Implementation specific error", 0x84: "Unsupported Protocol Version",
        0x85: "Client Identifier not valid", 0x86: "Bad User Name or Password", 0x87: "Not authorized",
        0x88: "Server unavailable", 0x89: "Server busy", 0x8A: "Banned", 0x8B: "Server shutting down",
        0x8C: "Bad authentication method", 0x8D: "Keep Alive timeout", 0x8E: "Session taken over",
        0x8F: "Topic Filter invalid", 0x90: "Topic Name invalid", 0x91: "Packet Identifier in use",
        0x92: "Packet Identifier not found", 0x93: "Receive Maximum exceeded", 0x94: "Topic Alias invalid",
        0x95: "Packet too large", 0x96: "Message rate too high", 0x97: "Quota exceeded",
        0x98: "Administrative action", 0x99: "Payload format invalid", 0x9A: "Retain not supported",
        0x9B: "QoS not supported", 0x9C: "Use another server", 0x9D: "Server moved",
        0x9E: "Shared Subscriptions not supported", 0x9F: "Connection rate exceeded", 0xA0: "Maximum connect time",
        0xA1: "Subscription Identifiers not supported", 0xA2: "Wildcard Subscriptions not supported",
    ]

    /// Table 2-6 as bit sets of packet types (bit n for the type with raw value n).
    private static let validity: [UInt8: UInt16] = {
        func set(_ types: PacketType...) -> UInt16 { types.reduce(0) { $0 | 1 << $1.rawValue } }
        let connack = set(.connack), disconnect = set(.disconnect), suback = set(.suback)
        let publishAcks = set(.puback, .pubrec)
        // Failures shared by PUBACK, PUBREC, SUBACK and UNSUBACK (and CONNACK, DISCONNECT for some).
        let common = connack | publishAcks | suback | set(.unsuback) | disconnect
        return [
            0x00: set(.connack, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .disconnect, .auth),
            0x01: suback, 0x02: suback, 0x04: disconnect, 0x10: publishAcks, 0x11: set(.unsuback),
            0x18: set(.auth), 0x19: set(.auth),
            0x80: common, 0x81: connack | disconnect, 0x82: connack | disconnect, 0x83: common,
            0x84: connack, 0x85: connack, 0x86: connack, 0x87: common, 0x88: connack,
            0x89: connack | disconnect, 0x8A: connack, 0x8B: disconnect, 0x8C: connack | disconnect,
            0x8D: disconnect, 0x8E: disconnect, 0x8F: suback | set(.unsuback) | disconnect,
            0x90: connack | publishAcks | disconnect, 0x91: publishAcks | suback | set(.unsuback),
            0x92: set(.pubrel, .pubcomp), 0x93: disconnect, 0x94: disconnect, 0x95: connack | disconnect,
            0x96: disconnect, 0x97: connack | publishAcks | suback | disconnect, 0x98: disconnect,
            0x99: connack | publishAcks | disconnect, 0x9A: connack | disconnect, 0x9B: connack | disconnect,
            0x9C: connack | disconnect, 0x9D: connack | disconnect, 0x9E: suback | disconnect,
            0x9F: connack | disconnect, 0xA0: disconnect, 0xA1: suback | disconnect, 0xA2: suback | disconnect,
        ]
    }()
}

extension MQTTReasonCode {
    /// The MQTT 5 code that stands for a 3.1.1 CONNACK return code (the same refusal in 5.0's table 3-1).
    public init(_ returnCode: ConnectReturnCode) {
        switch returnCode {
        case .accepted: self = .success
        case .unacceptableProtocolVersion: self = .unsupportedProtocolVersion
        case .identifierRejected: self = .clientIdentifierNotValid
        case .serverUnavailable: self = .serverUnavailable
        case .badUsernameOrPassword: self = .badUserNameOrPassword
        case .notAuthorized: self = .notAuthorized
        }
    }

    /// The code for a 3.1.1 SUBACK return code: the granted QoS, or 0x80 for failure (the same bytes).
    public init(_ returnCode: SubAckReturnCode) {
        self.init(rawValue: returnCode.rawValue)
    }
}

extension ConnectReturnCode {
    /// The nearest 3.1.1 return code for an MQTT 5 CONNACK reason code; 3.1.1 has only five refusals, so most
    /// 5.0 failures become ``serverUnavailable`` and the authorisation ones ``notAuthorized``.
    public init(_ reasonCode: MQTTReasonCode) {
        switch reasonCode {
        case .success: self = .accepted
        case .unsupportedProtocolVersion: self = .unacceptableProtocolVersion
        case .clientIdentifierNotValid: self = .identifierRejected
        case .badUserNameOrPassword: self = .badUsernameOrPassword
        case .notAuthorized, .banned, .badAuthenticationMethod: self = .notAuthorized
        default: self = .serverUnavailable
        }
    }
}

extension SubAckReturnCode {
    /// The 3.1.1 return code for an MQTT 5 SUBACK reason code: granted QoS 0 to 2 as is, every failure as 0x80.
    public init(_ reasonCode: MQTTReasonCode) {
        if let qos = QoS(rawValue: reasonCode.rawValue) {
            self = .granted(qos)
        } else {
            self = .failure
        }
    }
}
