import MQTTCore
import NIOCore
import Testing

/// One malformed input and the exact error it must produce.
struct MalformedCase: Sendable, CustomStringConvertible {
    var name: String
    var bytes: [UInt8]
    var error: MQTTCodecError
    var maximumPacketSize = MQTTPacketDecoder.protocolMaximumPacketSize
    var protocolVersion = MQTTProtocolVersion.v3_1_1
    var description: String { name }
}

private typealias W = Wire

/// A SUBSCRIBE with one filter and one options byte.
private func subscribe(_ filter: [UInt8], options: UInt8, packetID: UInt16 = 1) -> [UInt8] {
    W.packet(0x82, W.uint16(packetID) + W.bytes(filter) + [options])
}

/// A QoS 0 PUBLISH to a topic given as raw bytes.
private func publish(topic: [UInt8]) -> [UInt8] { W.packet(0x30, W.bytes(topic) + [0x21]) }

/// A 3.1.1 CONNECT with `flags` and the payload fields given.
private func connect(flags: UInt8, _ payload: [UInt8]) -> [UInt8] {
    W.packet(0x10, W.connectHeader(flags: flags) + payload)
}

let malformedCases: [MalformedCase] = [
    // MARK: Fixed header
    .init(name: "packet type 0 is reserved", bytes: [0x00, 0x00], error: .reservedPacketType(0)),
    .init(name: "packet type 15 (AUTH) does not exist in 3.1.1", bytes: [0xF0, 0x00], error: .reservedPacketType(15)),
    .init(name: "PUBREL flags must be 0b0010", bytes: [0x60, 0x02, 0x00, 0x01],
          error: .invalidFixedHeaderFlags(packetType: .pubrel, flags: 0)),
    .init(name: "SUBSCRIBE flags must be 0b0010", bytes: W.packet(0x80, W.uint16(1) + W.string("a") + [0]),
          error: .invalidFixedHeaderFlags(packetType: .subscribe, flags: 0)),
    .init(name: "UNSUBSCRIBE flags must be 0b0010", bytes: W.packet(0xA3, W.uint16(1) + W.string("a")),
          error: .invalidFixedHeaderFlags(packetType: .unsubscribe, flags: 3)),
    .init(name: "CONNECT flags must be 0", bytes: [0x11, 0x00], error: .invalidFixedHeaderFlags(packetType: .connect, flags: 1)),
    .init(name: "PUBACK flags must be 0", bytes: [0x42, 0x02, 0x00, 0x01],
          error: .invalidFixedHeaderFlags(packetType: .puback, flags: 2)),
    .init(name: "PINGREQ flags must be 0", bytes: [0xCF, 0x00], error: .invalidFixedHeaderFlags(packetType: .pingreq, flags: 15)),
    .init(name: "DISCONNECT flags must be 0", bytes: [0xE8, 0x00],
          error: .invalidFixedHeaderFlags(packetType: .disconnect, flags: 8)),
    .init(name: "PUBLISH QoS 3", bytes: W.packet(0x36, W.string("t") + W.uint16(1)), error: .invalidPublishQoS),
    .init(name: "PUBLISH QoS 0 with DUP", bytes: W.packet(0x38, W.string("t")), error: .duplicateFlagOnQoS0),
    .init(name: "remaining length with a fifth byte", bytes: [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], error: .remainingLengthTooLong),
    .init(name: "remaining length whose fourth byte continues", bytes: [0x30, 0x80, 0x80, 0x80, 0x80], error: .remainingLengthTooLong),
    .init(name: "packet over the configured maximum", bytes: W.packet(0x30, W.string("t") + [1, 2, 3]),
          error: .packetTooLarge(size: 6, maximum: 5), maximumPacketSize: 5),
    .init(name: "PUBACK remaining length 3", bytes: [0x40, 0x03, 0x00, 0x01, 0x00],
          error: .invalidRemainingLength(packetType: .puback, remainingLength: 3)),
    .init(name: "PUBCOMP remaining length 1", bytes: [0x70, 0x01, 0x01],
          error: .invalidRemainingLength(packetType: .pubcomp, remainingLength: 1)),
    .init(name: "CONNACK remaining length 3", bytes: [0x20, 0x03, 0x00, 0x00, 0x00],
          error: .invalidRemainingLength(packetType: .connack, remainingLength: 3)),
    .init(name: "UNSUBACK remaining length 0", bytes: [0xB0, 0x00],
          error: .invalidRemainingLength(packetType: .unsuback, remainingLength: 0)),
    .init(name: "PINGREQ remaining length 1", bytes: [0xC0, 0x01, 0x00],
          error: .invalidRemainingLength(packetType: .pingreq, remainingLength: 1)),
    .init(name: "PINGRESP remaining length 2", bytes: [0xD0, 0x02, 0x00, 0x00],
          error: .invalidRemainingLength(packetType: .pingresp, remainingLength: 2)),
    .init(name: "DISCONNECT remaining length 1", bytes: [0xE0, 0x01, 0x00],
          error: .invalidRemainingLength(packetType: .disconnect, remainingLength: 1)),
    .init(name: "MQTT 5 decoding is not supported yet", bytes: [0xC0, 0x00],
          error: .unsupportedProtocolLevel(5), protocolVersion: .v5),

    // MARK: Packet structure
    .init(name: "PUBLISH without topic length", bytes: [0x30, 0x01, 0x00], error: .unexpectedEndOfPacket),
    .init(name: "PUBLISH topic length past the end of the packet", bytes: [0x30, 0x04, 0x00, 0x05, 0x61, 0x62],
          error: .lengthPrefixExceedsPacket(declared: 5, available: 2)),
    .init(name: "PUBLISH topic length past the end even though more bytes follow in the stream",
          bytes: [0x30, 0x03, 0x00, 0x02, 0x61] + [0xC0, 0x00], error: .lengthPrefixExceedsPacket(declared: 2, available: 1)),
    .init(name: "QoS 1 PUBLISH without packet identifier", bytes: W.packet(0x32, W.string("a/b")), error: .unexpectedEndOfPacket),
    .init(name: "QoS 1 PUBLISH with packet identifier 0", bytes: W.packet(0x32, W.string("a") + W.uint16(0)),
          error: .zeroPacketIdentifier),
    .init(name: "QoS 2 PUBLISH with packet identifier 0", bytes: W.packet(0x34, W.string("a") + W.uint16(0) + [1]),
          error: .zeroPacketIdentifier),
    .init(name: "PUBACK packet identifier 0", bytes: [0x40, 0x02, 0x00, 0x00], error: .zeroPacketIdentifier),
    .init(name: "PUBREL packet identifier 0", bytes: [0x62, 0x02, 0x00, 0x00], error: .zeroPacketIdentifier),
    .init(name: "SUBSCRIBE packet identifier 0", bytes: subscribe(Array("a".utf8), options: 0, packetID: 0),
          error: .zeroPacketIdentifier),
    .init(name: "UNSUBSCRIBE packet identifier 0", bytes: W.packet(0xA2, W.uint16(0) + W.string("a")), error: .zeroPacketIdentifier),

    // MARK: UTF-8 (MQTT-1.5.3-1 / -2)
    .init(name: "U+0000 in a topic", bytes: publish(topic: [0x61, 0x00, 0x62]), error: .nullCharacterInString),
    .init(name: "overlong '/' (C0 AF)", bytes: publish(topic: [0xC0, 0xAF]), error: .invalidUTF8),
    .init(name: "overlong U+0000 (C0 80)", bytes: publish(topic: [0x61, 0xC0, 0x80]), error: .invalidUTF8),
    .init(name: "overlong three-byte '/' (E0 80 AF)", bytes: publish(topic: [0xE0, 0x80, 0xAF]), error: .invalidUTF8),
    .init(name: "overlong four-byte (F0 8F BF BF)", bytes: publish(topic: [0xF0, 0x8F, 0xBF, 0xBF]), error: .invalidUTF8),
    .init(name: "surrogate U+D800 (ED A0 80)", bytes: publish(topic: [0x61, 0xED, 0xA0, 0x80]), error: .invalidUTF8),
    .init(name: "surrogate U+DFFF (ED BF BF)", bytes: publish(topic: [0xED, 0xBF, 0xBF]), error: .invalidUTF8),
    .init(name: "lone continuation byte", bytes: publish(topic: [0x61, 0x80]), error: .invalidUTF8),
    .init(name: "truncated three-byte sequence", bytes: publish(topic: [0xE2, 0x82]), error: .invalidUTF8),
    .init(name: "lead byte without its continuation", bytes: publish(topic: [0xC3, 0x61]), error: .invalidUTF8),
    .init(name: "code point above U+10FFFF (F4 90 80 80)", bytes: publish(topic: [0xF4, 0x90, 0x80, 0x80]), error: .invalidUTF8),
    .init(name: "byte F5 never appears in UTF-8", bytes: publish(topic: [0xF5, 0x80, 0x80, 0x80]), error: .invalidUTF8),
    .init(name: "byte FF never appears in UTF-8", bytes: publish(topic: [0xFF]), error: .invalidUTF8),
    .init(name: "invalid UTF-8 in the client identifier", bytes: connect(flags: 0x02, W.bytes([0xC1, 0xBF])), error: .invalidUTF8),
    .init(name: "invalid UTF-8 in the user name", bytes: connect(flags: 0x82, W.string("id") + W.bytes([0xED, 0xA0, 0x80])),
          error: .invalidUTF8),

    // MARK: Topic names and filters
    .init(name: "PUBLISH empty topic name", bytes: publish(topic: []), error: .emptyTopicName),
    .init(name: "PUBLISH topic with '+'", bytes: publish(topic: Array("a/+".utf8)), error: .wildcardInTopicName),
    .init(name: "PUBLISH topic '#'", bytes: publish(topic: Array("#".utf8)), error: .wildcardInTopicName),
    .init(name: "SUBSCRIBE empty filter", bytes: subscribe([], options: 0), error: .emptyTopicFilter),
    .init(name: "SUBSCRIBE filter 'sport+'", bytes: subscribe(Array("sport+".utf8), options: 0), error: .wildcardNotWholeLevel),
    .init(name: "SUBSCRIBE filter 'sport/tennis#'", bytes: subscribe(Array("sport/tennis#".utf8), options: 0),
          error: .wildcardNotWholeLevel),
    .init(name: "SUBSCRIBE filter 'a/#/b'", bytes: subscribe(Array("a/#/b".utf8), options: 1), error: .multiLevelWildcardNotLast),
    .init(name: "UNSUBSCRIBE filter '#/'", bytes: W.packet(0xA2, W.uint16(1) + W.string("#/")), error: .multiLevelWildcardNotLast),
    .init(name: "UNSUBSCRIBE empty filter", bytes: W.packet(0xA2, W.uint16(1) + W.string("")), error: .emptyTopicFilter),

    // MARK: SUBSCRIBE / SUBACK / UNSUBSCRIBE
    .init(name: "SUBSCRIBE requested QoS 3", bytes: subscribe(Array("a".utf8), options: 3), error: .invalidSubscriptionQoS(3)),
    .init(name: "SUBSCRIBE reserved options bits", bytes: subscribe(Array("a".utf8), options: 0x04),
          error: .subscriptionOptionsReservedBitsSet(0x04)),
    .init(name: "SUBSCRIBE top reserved bit", bytes: subscribe(Array("a".utf8), options: 0x81),
          error: .subscriptionOptionsReservedBitsSet(0x81)),
    .init(name: "SUBSCRIBE without filters", bytes: [0x82, 0x02, 0x00, 0x01], error: .subscribeWithoutFilters),
    .init(name: "SUBSCRIBE filter without options byte", bytes: W.packet(0x82, W.uint16(1) + W.string("a")),
          error: .unexpectedEndOfPacket),
    .init(name: "UNSUBSCRIBE without filters", bytes: [0xA2, 0x02, 0x00, 0x01], error: .unsubscribeWithoutFilters),
    .init(name: "SUBACK return code 3", bytes: [0x90, 0x04, 0x00, 0x01, 0x00, 0x03], error: .invalidSubAckReturnCode(3)),
    .init(name: "SUBACK return code 0x81", bytes: [0x90, 0x03, 0x00, 0x01, 0x81], error: .invalidSubAckReturnCode(0x81)),
    .init(name: "SUBACK without return codes", bytes: [0x90, 0x02, 0x00, 0x01], error: .subAckWithoutReturnCodes),

    // MARK: CONNECT
    .init(name: "CONNECT protocol name 'MQTX'", bytes: W.packet(0x10, W.connectHeader(flags: 2, name: "MQTX") + W.string("id")),
          error: .invalidProtocolName("MQTX")),
    .init(name: "CONNECT protocol name in lower case", bytes: W.packet(0x10, W.connectHeader(flags: 2, name: "mqtt") + W.string("id")),
          error: .invalidProtocolName("mqtt")),
    .init(name: "CONNECT level 5 (MQTT 5 not implemented)",
          bytes: W.packet(0x10, W.connectHeader(flags: 2, level: 5) + [0x00] + W.string("id")), error: .unsupportedProtocolLevel(5)),
    .init(name: "CONNECT 'MQTT' with level 3", bytes: W.packet(0x10, W.connectHeader(flags: 2, level: 3) + W.string("id")),
          error: .unsupportedProtocolLevel(3)),
    .init(name: "CONNECT 'MQIsdp' with level 4",
          bytes: W.packet(0x10, W.connectHeader(flags: 2, name: "MQIsdp", level: 4) + W.string("id")),
          error: .unsupportedProtocolLevel(4)),
    .init(name: "CONNECT level 6 is checked before the flags",
          bytes: W.packet(0x10, W.connectHeader(flags: 0xFF, level: 6)), error: .unsupportedProtocolLevel(6)),
    .init(name: "CONNECT reserved flag", bytes: connect(flags: 0x03, W.string("id")), error: .connectReservedFlagSet),
    .init(name: "CONNECT will QoS without will flag", bytes: connect(flags: 0x0A, W.string("id")), error: .willQoSOrRetainWithoutWill),
    .init(name: "CONNECT will retain without will flag", bytes: connect(flags: 0x22, W.string("id")), error: .willQoSOrRetainWithoutWill),
    .init(name: "CONNECT will QoS 3", bytes: connect(flags: 0x1E, W.string("id") + W.string("w") + W.bytes([])),
          error: .invalidWillQoS),
    .init(name: "CONNECT password without user name", bytes: connect(flags: 0x42, W.string("id") + W.bytes([1])),
          error: .passwordWithoutUsername),
    .init(name: "CONNECT empty client id without clean session", bytes: connect(flags: 0x00, W.string("")),
          error: .emptyClientIdentifierWithoutCleanSession),
    .init(name: "MQTT 3.1 CONNECT with empty client id",
          bytes: W.packet(0x10, W.connectHeader(flags: 2, name: "MQIsdp", level: 3) + W.string("")),
          error: .emptyClientIdentifierInMQTT31),
    .init(name: "CONNECT without client identifier", bytes: connect(flags: 0x02, []), error: .unexpectedEndOfPacket),
    .init(name: "CONNECT truncated before keep alive", bytes: W.packet(0x10, W.string("MQTT") + [4, 2, 0]), error: .unexpectedEndOfPacket),
    .init(name: "CONNECT with extra bytes after its fields", bytes: connect(flags: 0x02, W.string("id") + [0xAB, 0xCD]),
          error: .trailingBytes(count: 2)),
    .init(name: "CONNECT user name flag without user name", bytes: connect(flags: 0x82, W.string("id")), error: .unexpectedEndOfPacket),
    .init(name: "CONNECT password field missing", bytes: connect(flags: 0xC2, W.string("id") + W.string("u")),
          error: .unexpectedEndOfPacket),
    .init(name: "CONNECT will message longer than the packet",
          bytes: connect(flags: 0x06, W.string("id") + W.string("w") + W.uint16(9) + [1, 2]),
          error: .lengthPrefixExceedsPacket(declared: 9, available: 2)),
    .init(name: "CONNECT will topic with wildcard", bytes: connect(flags: 0x06, W.string("id") + W.string("w/#") + W.bytes([])),
          error: .wildcardInTopicName),
    .init(name: "CONNECT empty will topic", bytes: connect(flags: 0x06, W.string("id") + W.string("") + W.bytes([])),
          error: .emptyTopicName),

    // MARK: CONNACK
    .init(name: "CONNACK reserved acknowledge flag", bytes: [0x20, 0x02, 0x02, 0x00], error: .connAckReservedFlagsSet(0x02)),
    .init(name: "CONNACK return code 6", bytes: [0x20, 0x02, 0x00, 0x06], error: .invalidConnAckReturnCode(6)),
    .init(name: "CONNACK session present with a refusal", bytes: [0x20, 0x02, 0x01, 0x05], error: .sessionPresentWithErrorReturnCode),
]

@Suite("Malformed input: each rule its own error")
struct MalformedInputTests {
    @Test("the table is large and its errors are varied")
    func tableSize() {
        #expect(malformedCases.count >= 40)
        #expect(Set(malformedCases.map(\.error)).count >= 40)
    }

    @Test("malformed input throws its specific error", arguments: malformedCases)
    func malformed(_ testCase: MalformedCase) {
        var decoder = MQTTPacketDecoder(maximumPacketSize: testCase.maximumPacketSize)
        decoder.protocolVersion = testCase.protocolVersion
        var buffer = ByteBuffer(bytes: testCase.bytes)
        var decoded: MQTTPacket?
        let error = codecError { decoded = try decoder.decode(from: &buffer) }
        #expect(error == testCase.error, "decoded \(String(describing: decoded)) instead")
        #expect(buffer.readerIndex == 0, "a failed decode must not consume bytes")
    }

    @Test("every error case named by the decoder is reachable from the table")
    func decoderErrorsCovered() {
        let seen = Set(malformedCases.map { caseName($0.error) })
        let decodingErrors: Set<String> = [
            "reservedPacketType", "invalidFixedHeaderFlags", "invalidPublishQoS", "duplicateFlagOnQoS0",
            "remainingLengthTooLong", "packetTooLarge", "invalidRemainingLength", "unexpectedEndOfPacket",
            "lengthPrefixExceedsPacket", "trailingBytes", "invalidUTF8", "nullCharacterInString", "emptyTopicName",
            "wildcardInTopicName", "emptyTopicFilter", "wildcardNotWholeLevel", "multiLevelWildcardNotLast",
            "zeroPacketIdentifier", "invalidSubscriptionQoS", "subscriptionOptionsReservedBitsSet",
            "subscribeWithoutFilters", "unsubscribeWithoutFilters", "subAckWithoutReturnCodes",
            "invalidSubAckReturnCode", "invalidProtocolName", "unsupportedProtocolLevel", "connectReservedFlagSet",
            "willQoSOrRetainWithoutWill", "invalidWillQoS", "passwordWithoutUsername",
            "emptyClientIdentifierWithoutCleanSession", "emptyClientIdentifierInMQTT31", "connAckReservedFlagsSet",
            "invalidConnAckReturnCode", "sessionPresentWithErrorReturnCode",
        ]
        #expect(decodingErrors.subtracting(seen).isEmpty)
    }

    private func caseName(_ error: MQTTCodecError) -> String {
        String(String(describing: error).prefix { $0 != "(" })
    }
}
