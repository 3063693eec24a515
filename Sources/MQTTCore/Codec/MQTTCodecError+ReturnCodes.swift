extension MQTTCodecError {
    /// The CONNACK return code to send before closing the connection, when the error arises while decoding CONNECT
    /// and MQTT 3.1.1 defines an answer for it; nil when the connection is to be closed without a CONNACK.
    ///
    /// ``unsupportedProtocolLevel(_:)`` maps to ``ConnectReturnCode/unacceptableProtocolVersion`` (MQTT-3.1.2-2);
    /// the client identifier errors map to ``ConnectReturnCode/identifierRejected`` (MQTT-3.1.3-9).
    public var connectReturnCode: ConnectReturnCode? {
        switch self {
        case .unsupportedProtocolLevel:
            return .unacceptableProtocolVersion
        case .emptyClientIdentifierWithoutCleanSession, .emptyClientIdentifierInMQTT31:
            return .identifierRejected
        case .reservedPacketType, .invalidFixedHeaderFlags, .invalidPublishQoS, .duplicateFlagOnQoS0,
            .remainingLengthTooLong, .packetTooLarge, .invalidRemainingLength, .unexpectedEndOfPacket,
            .lengthPrefixExceedsPacket, .trailingBytes, .invalidUTF8, .nullCharacterInString, .stringTooLong,
            .binaryDataTooLong, .emptyTopicName, .wildcardInTopicName, .emptyTopicFilter, .wildcardNotWholeLevel,
            .multiLevelWildcardNotLast, .zeroPacketIdentifier, .missingPacketIdentifier, .invalidSubscriptionQoS,
            .subscriptionOptionsReservedBitsSet, .subscribeWithoutFilters, .unsubscribeWithoutFilters,
            .subAckWithoutReturnCodes, .invalidSubAckReturnCode, .invalidProtocolName, .connectReservedFlagSet,
            .willQoSOrRetainWithoutWill, .invalidWillQoS, .passwordWithoutUsername, .connAckReservedFlagsSet,
            .invalidConnAckReturnCode, .sessionPresentWithErrorReturnCode, .malformedVariableByteInteger,
            .propertyLengthExceedsPacket, .unknownPropertyIdentifier, .propertyNotAllowed, .duplicateProperty,
            .invalidPropertyValue, .authenticationDataWithoutMethod, .missingAuthenticationMethod, .invalidReasonCode,
            .unsubAckWithoutReasonCodes,
            .invalidRetainHandling, .noLocalOnSharedSubscription, .emptyTopicNameWithoutTopicAlias,
            .unexpectedAuthPacket:
            return nil
        }
    }

    /// ``reasonCode`` as an ``MQTTReasonCode``.
    public var reason: MQTTReasonCode { MQTTReasonCode(rawValue: reasonCode) }

    /// The MQTT 5 reason code (MQTT 5.0 table 2-6) this error maps to, for a CONNACK or DISCONNECT.
    ///
    /// This is the one place where protocol errors become reason codes:
    /// 0x81 Malformed Packet (the bytes cannot be parsed: a bad length, an unknown property or one the packet type
    /// does not allow, a reason code the packet type does not define), 0x82 Protocol Error (parsed, but a value or
    /// a repetition the spec forbids), 0x84 Unsupported Protocol Version,
    /// 0x85 Client Identifier not valid, 0x8F Topic Filter invalid, 0x90 Topic Name invalid, 0x95 Packet too large.
    public var reasonCode: UInt8 {
        switch self {
        case .reservedPacketType, .invalidFixedHeaderFlags, .invalidPublishQoS, .remainingLengthTooLong,
            .invalidRemainingLength, .unexpectedEndOfPacket, .lengthPrefixExceedsPacket, .trailingBytes,
            .invalidUTF8, .nullCharacterInString, .stringTooLong, .binaryDataTooLong,
            .subscriptionOptionsReservedBitsSet, .subAckWithoutReturnCodes, .invalidSubAckReturnCode,
            .connectReservedFlagSet, .willQoSOrRetainWithoutWill, .invalidWillQoS, .passwordWithoutUsername,
            .connAckReservedFlagsSet, .invalidConnAckReturnCode, .malformedVariableByteInteger,
            .propertyLengthExceedsPacket, .unknownPropertyIdentifier, .propertyNotAllowed, .invalidReasonCode,
            .unsubAckWithoutReasonCodes:
            return MQTT5ReasonCode.malformedPacket
        case .duplicateFlagOnQoS0, .zeroPacketIdentifier, .missingPacketIdentifier, .invalidSubscriptionQoS,
            .subscribeWithoutFilters, .unsubscribeWithoutFilters, .sessionPresentWithErrorReturnCode,
            .duplicateProperty, .invalidPropertyValue, .authenticationDataWithoutMethod, .missingAuthenticationMethod,
            .invalidRetainHandling,
            .noLocalOnSharedSubscription, .emptyTopicNameWithoutTopicAlias, .unexpectedAuthPacket:
            return MQTT5ReasonCode.protocolError
        case .packetTooLarge:
            return MQTT5ReasonCode.packetTooLarge
        case .invalidProtocolName, .unsupportedProtocolLevel:
            return MQTT5ReasonCode.unsupportedProtocolVersion
        case .emptyClientIdentifierWithoutCleanSession, .emptyClientIdentifierInMQTT31:
            return MQTT5ReasonCode.clientIdentifierNotValid
        case .emptyTopicName, .wildcardInTopicName:
            return MQTT5ReasonCode.topicNameInvalid
        case .emptyTopicFilter, .wildcardNotWholeLevel, .multiLevelWildcardNotLast:
            return MQTT5ReasonCode.topicFilterInvalid
        }
    }
}

/// The MQTT 5 reason codes that ``MQTTCodecError/reasonCode`` produces (MQTT 5.0 table 2-6).
public enum MQTT5ReasonCode {
    /// 0x81 Malformed Packet.
    public static let malformedPacket: UInt8 = 0x81
    /// 0x82 Protocol Error.
    public static let protocolError: UInt8 = 0x82
    /// 0x84 Unsupported Protocol Version.
    public static let unsupportedProtocolVersion: UInt8 = 0x84
    /// 0x85 Client Identifier not valid.
    public static let clientIdentifierNotValid: UInt8 = 0x85
    /// 0x8F Topic Filter invalid.
    public static let topicFilterInvalid: UInt8 = 0x8F
    /// 0x90 Topic Name invalid.
    public static let topicNameInvalid: UInt8 = 0x90
    /// 0x95 Packet too large.
    public static let packetTooLarge: UInt8 = 0x95
}
