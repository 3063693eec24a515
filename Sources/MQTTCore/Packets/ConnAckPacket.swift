/// CONNACK: the server's answer to CONNECT (MQTT 3.1.1 section 3.2).
public struct ConnAckPacket: Sendable, Hashable {
    /// Whether the server resumed a stored session for this client.
    public var sessionPresent: Bool
    /// The connect return code (3.1.1) / reason code (5).
    public var returnCode: ConnectReturnCode
    /// MQTT 5 CONNACK properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a CONNACK packet.
    public init(sessionPresent: Bool = false, returnCode: ConnectReturnCode = .accepted, properties: MQTTProperties = .none) {
        self.sessionPresent = sessionPresent
        self.returnCode = returnCode
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
