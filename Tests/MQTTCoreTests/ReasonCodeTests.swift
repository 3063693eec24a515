import MQTTCore
import Testing

@Suite("MQTT 5 reason codes")
struct ReasonCodeTests {
    /// Each packet's own reason code table (MQTT 5.0 sections 3.2.2.2, 3.4.2.1, 3.5.2.1, 3.6.2.1, 3.7.2.1, 3.9.3,
    /// 3.11.3, 3.14.2.1, 3.15.2.1), written out independently of table 2-6, which the code follows.
    static let perPacket: [(PacketType, Set<UInt8>)] = [
        (.connack, [0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95, 0x97,
                    0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F]),
        (.puback, [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99]),
        (.pubrec, [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99]),
        (.pubrel, [0x00, 0x92]),
        (.pubcomp, [0x00, 0x92]),
        (.suback, [0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2]),
        (.unsuback, [0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91]),
        (.disconnect, [0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F, 0x90, 0x93, 0x94,
                       0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2]),
        (.auth, [0x00, 0x18, 0x19]),
        (.connect, []), (.publish, []), (.subscribe, []), (.unsubscribe, []), (.pingreq, []), (.pingresp, []),
    ]

    @Test("validity per packet type matches each packet's table", arguments: perPacket.indices)
    func validity(_ index: Int) {
        let (type, valid) = Self.perPacket[index]
        for raw in UInt8.min...UInt8.max {
            #expect(MQTTReasonCode(rawValue: raw).isValid(in: type) == valid.contains(raw), "0x\(String(raw, radix: 16)) in \(type)")
        }
    }

    @Test("names follow the spec, 0x00 by packet")
    func names() {
        #expect(MQTTReasonCode.success.name(in: .connack) == "Success")
        #expect(MQTTReasonCode.normalDisconnection.name(in: .disconnect) == "Normal disconnection")
        #expect(MQTTReasonCode.grantedQoS0.name(in: .suback) == "Granted QoS 0")
        #expect(MQTTReasonCode.topicAliasInvalid.name(in: .disconnect) == "Topic Alias invalid")
        #expect(MQTTReasonCode.topicAliasInvalid.name(in: .puback) == nil)
        #expect(MQTTReasonCode.wildcardSubscriptionsNotSupported.description == "0xA2 Wildcard Subscriptions not supported")
        #expect(MQTTReasonCode(rawValue: 0x03).description == "0x3")
        #expect(MQTTReasonCode.unspecifiedError.isFailure && !MQTTReasonCode.reAuthenticate.isFailure)
    }

    @Test("codec errors map to 0x81 or 0x82 as the spec says")
    func errorMapping() {
        let cases: [(MQTTCodecError, MQTTReasonCode)] = [
            (.unknownPropertyIdentifier(0x04), .malformedPacket),
            (.propertyNotAllowed(.topicAlias, in: .connect), .malformedPacket),
            (.propertyLengthExceedsPacket(declared: 5, available: 1), .malformedPacket),
            (.malformedVariableByteInteger, .malformedPacket),
            (.invalidReasonCode(0x03, packetType: .puback), .malformedPacket),
            (.unsubAckWithoutReasonCodes, .malformedPacket),
            (.duplicateProperty(.sessionExpiryInterval), .protocolError),
            (.invalidPropertyValue(.receiveMaximum, value: 0), .protocolError),
            (.authenticationDataWithoutMethod, .protocolError),
            (.missingAuthenticationMethod, .protocolError),
            (.invalidRetainHandling, .protocolError),
            (.noLocalOnSharedSubscription, .protocolError),
            (.emptyTopicNameWithoutTopicAlias, .protocolError),
            (.unexpectedAuthPacket, .protocolError),
        ]
        for (error, reason) in cases {
            #expect(error.reason == reason, "\(error)")
            #expect(error.connectReturnCode == nil, "\(error)")
        }
    }
}
