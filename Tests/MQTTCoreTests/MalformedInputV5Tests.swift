import MQTTCore
import NIOCore
import Testing

/// One malformed MQTT 5 input, the exact error it must produce, and the reason code that error maps to.
struct MalformedV5Case: Sendable, CustomStringConvertible {
    var name: String
    var bytes: [UInt8]
    var error: MQTTCodecError
    var reason: MQTTReasonCode
    var description: String { name }
}

private typealias W = Wire
private let malformed = MQTTReasonCode.malformedPacket
private let protocolError = MQTTReasonCode.protocolError

/// A PUBLISH QoS 0 to "t" with `properties` as its raw property block (length included).
private func publish(block: [UInt8]) -> [UInt8] { W.packet(0x30, W.string("t") + block) }

/// A SUBSCRIBE to `filter` with one options byte and no properties.
private func subscribe(_ filter: String, options: UInt8) -> [UInt8] {
    W.packet(0x82, W.uint16(1) + [0x00] + W.string(filter) + [options])
}

let malformedV5Cases: [MalformedV5Case] = [
    // MARK: Property block
    .init(name: "property length beyond the packet", bytes: publish(block: [0x05, 0x01, 0x01]),
          error: .propertyLengthExceedsPacket(declared: 5, available: 2), reason: malformed),
    .init(name: "property length missing", bytes: W.packet(0x30, W.string("t")), error: .unexpectedEndOfPacket,
          reason: malformed),
    .init(name: "property length with a fifth byte", bytes: publish(block: [0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
          error: .malformedVariableByteInteger, reason: malformed),
    .init(name: "property length not minimally encoded", bytes: publish(block: [0x80, 0x00]),
          error: .malformedVariableByteInteger, reason: malformed),
    .init(name: "truncated four-byte property", bytes: publish(block: [0x03, 0x02, 0x00, 0x00]),
          error: .unexpectedEndOfPacket, reason: malformed),
    .init(name: "truncated string property", bytes: publish(block: [0x04, 0x03, 0x00, 0x05, 0x61]),
          error: .lengthPrefixExceedsPacket(declared: 5, available: 1), reason: malformed),
    .init(name: "truncated user property value", bytes: publish(block: [0x06, 0x26, 0x00, 0x01, 0x6B, 0x00, 0x01]),
          error: .lengthPrefixExceedsPacket(declared: 1, available: 0), reason: malformed),
    .init(name: "truncated subscription identifier", bytes: publish(block: [0x02, 0x0B, 0x80]),
          error: .unexpectedEndOfPacket, reason: malformed),
    .init(name: "unknown property identifier 0x04", bytes: publish(block: [0x02, 0x04, 0x00]),
          error: .unknownPropertyIdentifier(4), reason: malformed),
    .init(name: "unknown two-byte property identifier", bytes: publish(block: [0x03, 0x81, 0x01, 0x00]),
          error: .unknownPropertyIdentifier(129), reason: malformed),
    .init(name: "ill-formed UTF-8 in a content type", bytes: publish(block: [0x04, 0x03, 0x00, 0x01, 0xFF]),
          error: .invalidUTF8, reason: malformed),
    .init(name: "topic alias in CONNECT", bytes: PropertyCarrier.bytes(.connect, [0x23, 0x00, 0x01]),
          error: .propertyNotAllowed(.topicAlias, in: .connect), reason: malformed),
    .init(name: "will delay interval in CONNECT's own properties",
          bytes: PropertyCarrier.bytes(.connect, [0x18, 0x00, 0x00, 0x00, 0x01]),
          error: .propertyNotAllowed(.willDelayInterval, in: .connect), reason: malformed),
    .init(name: "session expiry interval twice", bytes: PropertyCarrier.bytes(.connect, [0x11, 0, 0, 0, 1, 0x11, 0, 0, 0, 2]),
          error: .duplicateProperty(.sessionExpiryInterval), reason: protocolError),
    .init(name: "subscription identifier twice in SUBSCRIBE", bytes: PropertyCarrier.bytes(.subscribe, [0x0B, 0x01, 0x0B, 0x02]),
          error: .duplicateProperty(.subscriptionIdentifier), reason: protocolError),

    // MARK: Property values
    .init(name: "payload format indicator 2", bytes: publish(block: [0x02, 0x01, 0x02]),
          error: .invalidPropertyValue(.payloadFormatIndicator, value: 2), reason: protocolError),
    .init(name: "receive maximum 0", bytes: PropertyCarrier.bytes(.connect, [0x21, 0x00, 0x00]),
          error: .invalidPropertyValue(.receiveMaximum, value: 0), reason: protocolError),
    .init(name: "maximum packet size 0", bytes: PropertyCarrier.bytes(.connack, [0x27, 0, 0, 0, 0]),
          error: .invalidPropertyValue(.maximumPacketSize, value: 0), reason: protocolError),
    .init(name: "maximum QoS 2", bytes: PropertyCarrier.bytes(.connack, [0x24, 0x02]),
          error: .invalidPropertyValue(.maximumQoS, value: 2), reason: protocolError),
    .init(name: "topic alias 0", bytes: publish(block: [0x03, 0x23, 0x00, 0x00]),
          error: .invalidPropertyValue(.topicAlias, value: 0), reason: protocolError),
    .init(name: "subscription identifier 0", bytes: PropertyCarrier.bytes(.subscribe, [0x0B, 0x00]),
          error: .invalidPropertyValue(.subscriptionIdentifier, value: 0), reason: protocolError),
    .init(name: "request problem information 2", bytes: PropertyCarrier.bytes(.connect, [0x17, 0x02]),
          error: .invalidPropertyValue(.requestProblemInformation, value: 2), reason: protocolError),
    .init(name: "retain available 5", bytes: PropertyCarrier.bytes(.connack, [0x25, 0x05]),
          error: .invalidPropertyValue(.retainAvailable, value: 5), reason: protocolError),
    .init(name: "response topic with a wildcard", bytes: publish(block: [0x05, 0x08, 0x00, 0x02, 0x61, 0x23]),
          error: .wildcardInTopicName, reason: .topicNameInvalid),
    .init(name: "authentication data without method", bytes: PropertyCarrier.bytes(.connect, [0x16, 0x00, 0x01, 0x07]),
          error: .authenticationDataWithoutMethod, reason: protocolError),

    // MARK: Reason codes
    .init(name: "PUBACK reason code 0x92 (PUBREL/PUBCOMP only)", bytes: [0x40, 0x03, 0x00, 0x01, 0x92],
          error: .invalidReasonCode(0x92, packetType: .puback), reason: malformed),
    .init(name: "PUBREL reason code 0x10", bytes: [0x62, 0x03, 0x00, 0x01, 0x10],
          error: .invalidReasonCode(0x10, packetType: .pubrel), reason: malformed),
    .init(name: "CONNACK reason code 0x01", bytes: [0x20, 0x03, 0x00, 0x01, 0x00],
          error: .invalidReasonCode(0x01, packetType: .connack), reason: malformed),
    .init(name: "SUBACK reason code 0x03", bytes: [0x90, 0x04, 0x00, 0x01, 0x00, 0x03],
          error: .invalidReasonCode(0x03, packetType: .suback), reason: malformed),
    .init(name: "UNSUBACK reason code 0x01", bytes: [0xB0, 0x04, 0x00, 0x01, 0x00, 0x01],
          error: .invalidReasonCode(0x01, packetType: .unsuback), reason: malformed),
    .init(name: "DISCONNECT reason code 0x84 (CONNACK only)", bytes: [0xE0, 0x01, 0x84],
          error: .invalidReasonCode(0x84, packetType: .disconnect), reason: malformed),
    .init(name: "AUTH reason code 0x80", bytes: [0xF0, 0x02, 0x80, 0x00],
          error: .invalidReasonCode(0x80, packetType: .auth), reason: malformed),

    // MARK: Packet structure
    .init(name: "CONNACK v5 reserved acknowledge flag", bytes: [0x20, 0x03, 0x02, 0x00, 0x00],
          error: .connAckReservedFlagsSet(0x02), reason: malformed),
    .init(name: "CONNACK v5 session present with a refusal", bytes: [0x20, 0x03, 0x01, 0x87, 0x00],
          error: .sessionPresentWithErrorReturnCode, reason: protocolError),
    .init(name: "CONNACK v5 trailing byte after properties", bytes: [0x20, 0x04, 0x00, 0x00, 0x00, 0x00],
          error: .trailingBytes(count: 1), reason: malformed),
    .init(name: "PUBACK v5 remaining length 1", bytes: [0x40, 0x01, 0x00],
          error: .unexpectedEndOfPacket, reason: malformed),
    .init(name: "PUBACK v5 packet identifier 0", bytes: [0x40, 0x03, 0x00, 0x00, 0x10],
          error: .zeroPacketIdentifier, reason: protocolError),
    .init(name: "PUBCOMP v5 trailing byte after properties", bytes: [0x70, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00],
          error: .trailingBytes(count: 1), reason: malformed),
    .init(name: "PINGREQ v5 remaining length 1", bytes: [0xC0, 0x01, 0x00],
          error: .invalidRemainingLength(packetType: .pingreq, remainingLength: 1), reason: malformed),
    .init(name: "PUBLISH v5 empty topic without topic alias", bytes: W.packet(0x30, W.string("") + [0x00]),
          error: .emptyTopicNameWithoutTopicAlias, reason: protocolError),
    .init(name: "SUBSCRIBE v5 options reserved bit 6", bytes: subscribe("a", options: 0x40),
          error: .subscriptionOptionsReservedBitsSet(0x40), reason: malformed),
    .init(name: "SUBSCRIBE v5 options reserved bit 7", bytes: subscribe("a", options: 0x81),
          error: .subscriptionOptionsReservedBitsSet(0x81), reason: malformed),
    .init(name: "SUBSCRIBE v5 QoS 3", bytes: subscribe("a", options: 0x03), error: .invalidSubscriptionQoS(3),
          reason: protocolError),
    .init(name: "SUBSCRIBE v5 retain handling 3", bytes: subscribe("a", options: 0x30), error: .invalidRetainHandling,
          reason: protocolError),
    .init(name: "SUBSCRIBE v5 no local on a shared subscription", bytes: subscribe("$share/g/a", options: 0x04),
          error: .noLocalOnSharedSubscription, reason: protocolError),
    .init(name: "SUBSCRIBE v5 without filters", bytes: W.packet(0x82, W.uint16(1) + [0x00]),
          error: .subscribeWithoutFilters, reason: protocolError),
    .init(name: "SUBACK v5 without reason codes", bytes: [0x90, 0x03, 0x00, 0x01, 0x00],
          error: .subAckWithoutReturnCodes, reason: malformed),
    .init(name: "UNSUBACK v5 without reason codes", bytes: [0xB0, 0x03, 0x00, 0x01, 0x00],
          error: .unsubAckWithoutReasonCodes, reason: malformed),
    .init(name: "UNSUBSCRIBE v5 without filters", bytes: W.packet(0xA2, W.uint16(1) + [0x00]),
          error: .unsubscribeWithoutFilters, reason: protocolError),
    .init(name: "AUTH remaining length 1 (properties missing)", bytes: [0xF0, 0x01, 0x18],
          error: .unexpectedEndOfPacket, reason: malformed),
    .init(name: "AUTH with properties but no method", bytes: [0xF0, 0x06, 0x18, 0x04, 0x1F, 0x00, 0x01, 0x61],
          error: .missingAuthenticationMethod, reason: protocolError),
    .init(name: "AUTH flags must be 0", bytes: [0xF1, 0x00],
          error: .invalidFixedHeaderFlags(packetType: .auth, flags: 1), reason: malformed),
    .init(name: "CONNECT v5 will property not allowed (topic alias)",
          bytes: PropertyCarrier.bytes(.will, [0x23, 0x00, 0x01]),
          error: .propertyNotAllowed(.topicAlias, in: .will), reason: malformed),
]

@Suite("Malformed MQTT 5 input")
struct MalformedInputV5Tests {
    @Test("malformed MQTT 5 input throws its specific error, which maps to its reason code", arguments: malformedV5Cases)
    func malformed(_ testCase: MalformedV5Case) {
        var decoder = version5Decoder()
        var buffer = ByteBuffer(bytes: testCase.bytes)
        var decoded: MQTTDecodedPacket?
        let error = codecError { decoded = try decoder.decodePacketOrAuth(from: &buffer) }
        #expect(error == testCase.error, "decoded \(String(describing: decoded)) instead")
        #expect(error?.reason == testCase.reason)
        #expect(buffer.readerIndex == 0, "a failed decode must not consume bytes")
    }

    /// Table 2-4's last column, written out here rather than taken from the code under test.
    static let specAllowedContexts: [MQTTPropertyIdentifier: Set<MQTTPropertyContext>] = [
        .payloadFormatIndicator: [.publish, .will], .messageExpiryInterval: [.publish, .will],
        .contentType: [.publish, .will], .responseTopic: [.publish, .will], .correlationData: [.publish, .will],
        .subscriptionIdentifier: [.publish, .subscribe], .sessionExpiryInterval: [.connect, .connack, .disconnect],
        .assignedClientIdentifier: [.connack], .serverKeepAlive: [.connack],
        .authenticationMethod: [.connect, .connack, .auth], .authenticationData: [.connect, .connack, .auth],
        .requestProblemInformation: [.connect], .willDelayInterval: [.will], .requestResponseInformation: [.connect],
        .responseInformation: [.connack], .serverReference: [.connack, .disconnect],
        .reasonString: [.connack, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .disconnect, .auth],
        .receiveMaximum: [.connect, .connack], .topicAliasMaximum: [.connect, .connack], .topicAlias: [.publish],
        .maximumQoS: [.connack], .retainAvailable: [.connack], .userProperty: Set(MQTTPropertyContext.allCases),
        .maximumPacketSize: [.connect, .connack], .wildcardSubscriptionAvailable: [.connack],
        .subscriptionIdentifierAvailable: [.connack], .sharedSubscriptionAvailable: [.connack],
    ]

    @Test("the allowed contexts follow table 2-4", arguments: MQTTPropertyIdentifier.allCases)
    func allowedContexts(_ identifier: MQTTPropertyIdentifier) throws {
        let allowed = try #require(Self.specAllowedContexts[identifier])
        for context in MQTTPropertyContext.allCases {
            #expect(identifier.isAllowed(in: context) == allowed.contains(context), "\(context)")
        }
    }

    /// Each golden property placed in every context table 2-4 does not list it for.
    static let notAllowedCases: [MalformedV5Case] = goldenProperties.flatMap { golden in
        MQTTPropertyContext.allCases.compactMap { context -> MalformedV5Case? in
            guard let first = golden.properties.first,
                let allowed = specAllowedContexts[first.identifier], !allowed.contains(context)
            else { return nil }
            return MalformedV5Case(
                name: "\(golden.name) in \(context)", bytes: PropertyCarrier.bytes(context, golden.bytes),
                error: .propertyNotAllowed(first.identifier, in: context), reason: .malformedPacket)
        }
    }

    @Test("a property in a packet that does not allow it is a Malformed Packet")
    func notAllowed() {
        #expect(Self.notAllowedCases.count > 200)
        for testCase in Self.notAllowedCases {
            var decoder = version5Decoder()
            var buffer = ByteBuffer(bytes: testCase.bytes)
            let error = codecError { _ = try decoder.decodePacketOrAuth(from: &buffer) }
            #expect(error == testCase.error, "\(testCase.name)")
            #expect(error?.reason == .malformedPacket, "\(testCase.name)")
        }
    }

    @Test("a property given twice is a Protocol Error unless the spec lets it repeat", arguments: goldenProperties)
    func duplicate(_ golden: GoldenProperty) throws {
        let bytes = PropertyCarrier.bytes(golden.context, golden.bytes + golden.bytes)
        // User Property anywhere, Subscription Identifier in PUBLISH (MQTT 5.0 3.3.2.3.8); nothing else repeats.
        func mayRepeat(_ property: MQTTProperty) -> Bool {
            property.identifier == .userProperty
                || (property.identifier == .subscriptionIdentifier && golden.context == .publish)
        }
        let repeatable = golden.properties.allSatisfy(mayRepeat)
        var decoder = version5Decoder()
        var buffer = ByteBuffer(bytes: bytes)
        let error = codecError { _ = try decoder.decodePacketOrAuth(from: &buffer) }
        if repeatable {
            #expect(error == nil)
        } else {
            let first = try #require(golden.properties.first { !mayRepeat($0) })
            #expect(error == .duplicateProperty(first.identifier))
            #expect(error?.reason == .protocolError)
        }
    }

    @Test("every MQTT 5 decoding error is reachable from the table")
    func errorsCovered() {
        let seen = Set(malformedV5Cases.map { String(String(describing: $0.error).prefix { $0 != "(" }) })
        let expected: Set<String> = [
            "malformedVariableByteInteger", "propertyLengthExceedsPacket", "unknownPropertyIdentifier",
            "propertyNotAllowed", "duplicateProperty", "invalidPropertyValue", "authenticationDataWithoutMethod",
            "missingAuthenticationMethod", "invalidReasonCode", "unsubAckWithoutReasonCodes", "invalidRetainHandling",
            "noLocalOnSharedSubscription", "emptyTopicNameWithoutTopicAlias", "subscriptionOptionsReservedBitsSet",
        ]
        #expect(expected.subtracting(seen).isEmpty, "\(expected.subtracting(seen))")
    }
}
