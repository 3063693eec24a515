import MQTTCore
import NIOCore
import Testing

/// The decoder decodes MQTT 5 only when asked to; a server without MQTT 5 keeps refusing it as before.
@Suite("MQTT 5 opt-in")
struct VersionGateTests {
    static let connectV5 = goldenPacketsV5[0]

    @Test("the default decoder refuses a level-5 CONNECT with the error answered by CONNACK 0x01")
    func defaultRefusesVersion5() {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: Self.connectV5.bytes)
        let error = codecError { _ = try decoder.decode(from: &buffer) }
        #expect(error == .unsupportedProtocolLevel(5))
        #expect(error?.connectReturnCode == .unacceptableProtocolVersion)
    }

    @Test("the default handler refuses it too")
    func defaultHandlerRefuses() {
        #expect(MQTTPacketDecoderHandler().decoder.acceptsVersion5 == false)
        #expect(MQTTPacketDecoderHandler(acceptsVersion5: true).decoder.acceptsVersion5)
    }

    @Test("a decoder that accepts MQTT 5 parses a level-5 CONNECT before any version is set")
    func optInParsesConnect() throws {
        let decoder = MQTTPacketDecoder(acceptsVersion5: true)
        #expect(try decodedSingle(Self.connectV5.bytes, decoder: decoder) == Self.connectV5.packet)
    }

    @Test("a decoder that accepts MQTT 5 still decodes 3.1.1 until told otherwise", arguments: goldenPackets)
    func optInStillDecodes311(_ golden: GoldenPacket) throws {
        #expect(try decodedSingle(golden.bytes, decoder: MQTTPacketDecoder(acceptsVersion5: true)) == golden.packet)
    }

    @Test("AUTH is a reserved type outside MQTT 5, and a Protocol Error for decode(from:)")
    func authGate() throws {
        var decoder = MQTTPacketDecoder(acceptsVersion5: true)
        var buffer = ByteBuffer(bytes: [0xF0, 0x00])
        #expect(codecError { _ = try decoder.decodePacketOrAuth(from: &buffer) } == .reservedPacketType(15))
        decoder.protocolVersion = .v5
        #expect(codecError { _ = try decoder.decode(from: &buffer) } == .unexpectedAuthPacket)
        #expect(buffer.readerIndex == 0)
        #expect(try decoder.decodePacketOrAuth(from: &buffer) == .auth(AuthPacket()))
    }

    @Test("a 3.1.1 CONNACK reaches an MQTT 5 client as the equivalent reason code")
    func version311ConnAckOnVersion5() throws {
        let decoded = try decodedSingle([0x20, 0x02, 0x00, 0x01], decoder: version5Decoder())
        #expect(decoded == .connack(ConnAckPacket(reasonCode: .unsupportedProtocolVersion)))
    }

    @Test("the same packet has its 3.1.1 form on a 3.1.1 connection: MQTT 5 fields are left out")
    func version5FieldsLeftOutIn311() throws {
        let puback = MQTTPacket.puback(
            PubAckPacket(packetID: 1, reasonCode: .noMatchingSubscribers, properties: MQTTProperties([.reasonString("r")])))
        #expect(try encoded(puback) == [0x40, 0x02, 0x00, 0x01])
        let subscribe = MQTTPacket.subscribe(
            SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "a", qos: .atLeastOnce, noLocal: true)]))
        #expect(try encoded(subscribe) == [0x82, 0x06, 0x00, 0x01, 0x00, 0x01, 0x61, 0x01])
    }

    @Test("the encoder refuses what the MQTT 5 decoder would refuse")
    func encoderRefusals() {
        let cases: [(MQTTPacket, MQTTCodecError)] = [
            (.puback(PubAckPacket(packetID: 1, reasonCode: .packetIdentifierNotFound)),
             .invalidReasonCode(0x92, packetType: .puback)),
            (.connack(ConnAckPacket(reasonCode: .success, properties: MQTTProperties([.topicAlias(1)]))),
             .propertyNotAllowed(.topicAlias, in: .connack)),
            (.publish(PublishPacket(topic: "t", payload: ByteBuffer(), properties: MQTTProperties([.topicAlias(1), .topicAlias(2)]))),
             .duplicateProperty(.topicAlias)),
            (.publish(PublishPacket(topic: "t", payload: ByteBuffer(), properties: MQTTProperties([.subscriptionIdentifier(0)]))),
             .invalidPropertyValue(.subscriptionIdentifier, value: 0)),
            (.connect(ConnectPacket(protocolVersion: .v5, clientIdentifier: "c", properties: MQTTProperties([.authenticationData([1])]))),
             .authenticationDataWithoutMethod),
            (.unsuback(UnsubAckPacket(packetID: 1)), .unsubAckWithoutReasonCodes),
            (.disconnect(DisconnectPacket(reasonCode: .grantedQoS1)), .invalidReasonCode(0x01, packetType: .disconnect)),
            (.connack(ConnAckPacket(sessionPresent: true, reasonCode: .banned)), .sessionPresentWithErrorReturnCode),
        ]
        for (packet, expected) in cases {
            var buffer = ByteBuffer(bytes: [0x01])
            let error = codecError { try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer) }
            #expect(error == expected, "\(packet)")
            #expect(buffer.bytes == [0x01], "\(packet)")
        }
        var buffer = ByteBuffer()
        let authError = codecError {
            try MQTTPacketEncoder.encode(AuthPacket(reasonCode: .continueAuthentication), into: &buffer)
        }
        #expect(authError == .missingAuthenticationMethod)
    }
}
