/// Everything that can be wrong with MQTT bytes on the wire, or with a packet that is to be encoded.
///
/// Every case is one distinct rule of MQTT 3.1.1 or 5.0 (the spec's normative statement is cited where there is one),
/// so that callers and tests can tell exactly which rule a peer broke. Map a case to what goes back on the wire
/// with ``connectReturnCode`` (3.1.1 CONNACK) or ``reasonCode`` (MQTT 5 reason code).
public enum MQTTCodecError: Error, Sendable, Hashable {
    // MARK: Fixed header

    /// The packet type nibble is 0 (reserved), or 15 (AUTH) on a connection that is not MQTT 5 (MQTT 3.1.1 2.2.1).
    case reservedPacketType(UInt8)
    /// The low nibble of the first byte differs from the value the spec fixes for this packet type: 0b0010 for
    /// PUBREL, SUBSCRIBE and UNSUBSCRIBE, 0 for all others except PUBLISH (MQTT-2.2.2-1, MQTT-2.2.2-2).
    case invalidFixedHeaderFlags(packetType: PacketType, flags: UInt8)
    /// A PUBLISH fixed header has both QoS bits set (QoS 3) (MQTT-3.3.1-4).
    case invalidPublishQoS
    /// A QoS 0 PUBLISH has its DUP flag set (MQTT-3.3.1-2).
    case duplicateFlagOnQoS0
    /// The remaining length's variable byte integer continues past its fourth byte (MQTT 3.1.1 2.2.3).
    case remainingLengthTooLong
    /// The remaining length (variable header plus payload, not counting the fixed header) exceeds the maximum
    /// the decoder is configured with, or the protocol's 268,435,455 when encoding.
    case packetTooLarge(size: Int, maximum: Int)
    /// A packet whose remaining length the spec fixes (2 for CONNACK, PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK;
    /// 0 for PINGREQ, PINGRESP, DISCONNECT) announces another remaining length.
    case invalidRemainingLength(packetType: PacketType, remainingLength: Int)

    // MARK: Packet structure

    /// A fixed-width field (a byte, a two-byte integer, a length prefix) lies past the end of the packet.
    case unexpectedEndOfPacket
    /// A UTF-8 string's or binary field's length prefix announces more bytes than the packet has left.
    case lengthPrefixExceedsPacket(declared: Int, available: Int)
    /// Bytes remain after the last field of the packet (the remaining length is larger than the fields).
    case trailingBytes(count: Int)

    // MARK: Strings and binary data

    /// A string is not well-formed UTF-8: a bad or truncated sequence, an overlong encoding, a surrogate code
    /// point (U+D800...U+DFFF), or a code point above U+10FFFF (MQTT-1.5.3-1).
    case invalidUTF8
    /// A string contains the null character U+0000 (MQTT-1.5.3-2).
    case nullCharacterInString
    /// A string to encode is longer than 65,535 bytes in UTF-8, the most its two-byte length prefix can express.
    case stringTooLong(byteCount: Int)
    /// Binary data to encode (will payload, password) is longer than 65,535 bytes, the most its prefix can express.
    case binaryDataTooLong(byteCount: Int)

    // MARK: Topics

    /// A topic name (PUBLISH, will) is empty (MQTT-4.7.3-1).
    case emptyTopicName
    /// A topic name (PUBLISH, will) contains a wildcard character '+' or '#' (MQTT-3.3.2-2).
    case wildcardInTopicName
    /// A topic filter (SUBSCRIBE, UNSUBSCRIBE) is empty (MQTT-4.7.3-1).
    case emptyTopicFilter
    /// A topic filter has '+' or '#' sharing a level with other characters, as in "sport+" (MQTT-4.7.1-2, MQTT-4.7.1-3).
    case wildcardNotWholeLevel
    /// A topic filter has '#' before its last level, as in "a/#/b" or "#/" (MQTT-4.7.1-2).
    case multiLevelWildcardNotLast

    // MARK: Packet identifiers and subscriptions

    /// A packet identifier is 0 where the spec requires a non-zero one (MQTT-2.3.1-1).
    case zeroPacketIdentifier
    /// A QoS 1 or 2 PUBLISH to encode has no packet identifier (MQTT-2.3.1-1).
    case missingPacketIdentifier
    /// A SUBSCRIBE requests QoS 3 for a filter (MQTT-3-8.3-4).
    case invalidSubscriptionQoS(UInt8)
    /// A SUBSCRIBE's requested-QoS byte has one of its six reserved upper bits set (MQTT-3-8.3-4).
    case subscriptionOptionsReservedBitsSet(UInt8)
    /// A SUBSCRIBE carries no topic filter (MQTT-3.8.3-3).
    case subscribeWithoutFilters
    /// An UNSUBSCRIBE carries no topic filter (MQTT-3.10.3-2).
    case unsubscribeWithoutFilters
    /// A SUBACK carries no return code (it must carry one per requested filter, MQTT-3.8.4-5).
    case subAckWithoutReturnCodes
    /// A SUBACK return code is not 0x00, 0x01, 0x02 or 0x80 (MQTT-3.9.3-2).
    case invalidSubAckReturnCode(UInt8)

    // MARK: CONNECT

    /// The CONNECT protocol name is neither "MQTT" nor "MQIsdp" (MQTT-3.1.2-1).
    case invalidProtocolName(String)
    /// The CONNECT protocol level is not supported with its protocol name: only "MQTT" with 4 and "MQIsdp" with 3
    /// are (MQTT-3.1.2-2). MQTT 5 (level 5) is reported here too until it is implemented. Answered with CONNACK 0x01.
    case unsupportedProtocolLevel(UInt8)
    /// The reserved bit 0 of the CONNECT flags is set (MQTT-3.1.2-3).
    case connectReservedFlagSet
    /// The will flag is 0 but the will QoS or will retain flag is not 0 (MQTT-3.1.2-11, MQTT-3.1.2-13, MQTT-3.1.2-15).
    case willQoSOrRetainWithoutWill
    /// The will QoS is 3 (MQTT-3.1.2-14).
    case invalidWillQoS
    /// The password flag is set without the user name flag (MQTT-3.1.2-22).
    case passwordWithoutUsername
    /// The client identifier is empty while Clean Session is 0 (MQTT-3.1.3-7, MQTT-3.1.3-8). Answered with CONNACK 0x02.
    case emptyClientIdentifierWithoutCleanSession
    /// The client identifier is empty in an MQTT 3.1 ("MQIsdp") CONNECT, which requires 1 to 23 characters.
    /// Answered with CONNACK 0x02.
    case emptyClientIdentifierInMQTT31

    // MARK: CONNACK

    /// The CONNACK acknowledge flags have one of their reserved bits 7...1 set (MQTT 3.1.1 3.2.2.1).
    case connAckReservedFlagsSet(UInt8)
    /// The CONNACK return code is not one of the six defined in MQTT 3.1.1 (table 3.1).
    case invalidConnAckReturnCode(UInt8)
    /// A CONNACK with a non-zero return code has Session Present set (MQTT-3.2.2-4).
    case sessionPresentWithErrorReturnCode

    // MARK: MQTT 5

    /// A variable byte integer inside the packet (a property length, property identifier or subscription
    /// identifier) continues past its fourth byte or uses more bytes than its value needs (MQTT-1.5.5-1).
    case malformedVariableByteInteger
    /// The property length announces more bytes than the packet has left (MQTT 5.0 2.2.2.1).
    case propertyLengthExceedsPacket(declared: Int, available: Int)
    /// A property identifier that MQTT 5.0 does not define (MQTT 5.0 2.2.2.2).
    case unknownPropertyIdentifier(Int)
    /// A property appears in a packet (or the will properties) that table 2-4 does not list it for: a Malformed
    /// Packet (MQTT 5.0 2.2.2.2).
    case propertyNotAllowed(MQTTPropertyIdentifier, in: MQTTPropertyContext)
    /// A property other than User Property (and Subscription Identifier in PUBLISH) appears twice: a Protocol Error.
    case duplicateProperty(MQTTPropertyIdentifier)
    /// A property has a value the spec forbids: Payload Format Indicator, Maximum QoS or a flag above 1, Receive
    /// Maximum, Maximum Packet Size, Topic Alias or Subscription Identifier 0, a Subscription Identifier above
    /// 268,435,455: a Protocol Error.
    case invalidPropertyValue(MQTTPropertyIdentifier, value: Int)
    /// Authentication Data without Authentication Method (MQTT 5.0 3.1.2.11.10, 3.2.2.3.18): a Protocol Error.
    case authenticationDataWithoutMethod
    /// An AUTH packet with properties has no Authentication Method (MQTT 5.0 3.15.2.2.2): a Protocol Error.
    case missingAuthenticationMethod
    /// A reason code that MQTT 5.0 does not allow in this packet type (table 2-6 and each packet's own table).
    case invalidReasonCode(UInt8, packetType: PacketType)
    /// An MQTT 5 UNSUBACK carries no reason code (it carries one per topic filter of the UNSUBSCRIBE).
    case unsubAckWithoutReasonCodes
    /// A subscription's Retain Handling is 3 (MQTT 5.0 3.8.3.1): a Protocol Error.
    case invalidRetainHandling
    /// No Local is set on a shared subscription ("$share/...") (MQTT-3.8.3-4): a Protocol Error.
    case noLocalOnSharedSubscription
    /// An MQTT 5 PUBLISH has an empty topic name and no Topic Alias (MQTT 5.0 3.3.2.1): a Protocol Error.
    case emptyTopicNameWithoutTopicAlias
    /// An AUTH packet reached ``MQTTPacketDecoder/decode(from:)``, whose callers do not take part in enhanced
    /// authentication; ``MQTTPacketDecoder/decodePacketOrAuth(from:)`` returns it. A Protocol Error (MQTT-4.12.0-6).
    case unexpectedAuthPacket
}
