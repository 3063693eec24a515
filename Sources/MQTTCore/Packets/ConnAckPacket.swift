/// CONNACK: the server's answer to CONNECT (MQTT 3.1.1 section 3.2, MQTT 5.0 section 3.2).
public struct ConnAckPacket: Sendable, Hashable {
    /// Whether the server resumed a stored session for this client.
    public var sessionPresent: Bool
    /// The MQTT 5 reason code. A 3.1.1 CONNACK is held as the 5.0 code for the same refusal (table 3-1 of each
    /// spec), so that one field serves both versions; ``returnCode`` is the 3.1.1 view of it.
    public var reasonCode: MQTTReasonCode
    /// MQTT 5 CONNACK properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// The connect return code of 3.1.1: ``reasonCode`` mapped to the nearest of its six values.
    public var returnCode: ConnectReturnCode {
        get { ConnectReturnCode(reasonCode) }
        set { reasonCode = MQTTReasonCode(newValue) }
    }

    /// Creates a CONNACK packet from a 3.1.1 return code.
    public init(sessionPresent: Bool = false, returnCode: ConnectReturnCode = .accepted, properties: MQTTProperties = .none) {
        self.sessionPresent = sessionPresent
        self.reasonCode = MQTTReasonCode(returnCode)
        self.properties = properties
    }

    /// Creates a CONNACK packet from an MQTT 5 reason code.
    public init(sessionPresent: Bool = false, reasonCode: MQTTReasonCode, properties: MQTTProperties = .none) {
        self.sessionPresent = sessionPresent
        self.reasonCode = reasonCode
        self.properties = properties
    }
}

/// CONNACK return codes of MQTT 3.1.1 (table 3.1).
public enum ConnectReturnCode: UInt8, Sendable, Hashable, CaseIterable {
    /// 0x00 Connection accepted.
    case accepted = 0x00
    /// 0x01 The server does not support the requested protocol level.
    case unacceptableProtocolVersion = 0x01
    /// 0x02 The client identifier is well-formed UTF-8 but not allowed by the server.
    case identifierRejected = 0x02
    /// 0x03 The network connection is made but the MQTT service is unavailable.
    case serverUnavailable = 0x03
    /// 0x04 The user name or password is malformed or wrong.
    case badUsernameOrPassword = 0x04
    /// 0x05 The client is not authorized to connect.
    case notAuthorized = 0x05
}
