import MQTTCore
import NIOCore
import Testing

@Suite("Packets the encoder refuses")
struct EncoderErrorTests {
    static let tooLong = String(repeating: "x", count: 65_536)

    static let cases: [(name: String, packet: MQTTPacket, version: MQTTProtocolVersion, error: MQTTCodecError)] = [
        ("topic over 65,535 bytes", .publish(PublishPacket(topic: tooLong, payload: ByteBuffer())), .v3_1_1,
         .stringTooLong(byteCount: 65_536)),
        ("client id over 65,535 bytes", .connect(ConnectPacket(clientIdentifier: tooLong)), .v3_1_1,
         .stringTooLong(byteCount: 65_536)),
        ("user name over 65,535 bytes", .connect(ConnectPacket(clientIdentifier: "c", username: tooLong)), .v3_1_1,
         .stringTooLong(byteCount: 65_536)),
        ("password over 65,535 bytes",
         .connect(ConnectPacket(clientIdentifier: "c", username: "u", password: Array(repeating: 1, count: 65_536))),
         .v3_1_1, .binaryDataTooLong(byteCount: 65_536)),
        ("will payload over 65,535 bytes",
         .connect(ConnectPacket(clientIdentifier: "c", will: .init(topic: "w", payload: ByteBuffer(repeating: 0, count: 65_536)))),
         .v3_1_1, .binaryDataTooLong(byteCount: 65_536)),
        ("filter over 65,535 bytes",
         .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: tooLong, qos: .atMostOnce)])), .v3_1_1,
         .stringTooLong(byteCount: 65_536)),
        ("unsubscribe filter over 65,535 bytes", .unsubscribe(UnsubscribePacket(packetID: 1, topicFilters: [tooLong])),
         .v3_1_1, .stringTooLong(byteCount: 65_536)),
        ("QoS 1 PUBLISH without packet id",
         .publish(PublishPacket(topic: "t", payload: ByteBuffer(), qos: .atLeastOnce)), .v3_1_1, .missingPacketIdentifier),
        ("QoS 2 PUBLISH without packet id",
         .publish(PublishPacket(topic: "t", payload: ByteBuffer(), qos: .exactlyOnce)), .v3_1_1, .missingPacketIdentifier),
        ("QoS 1 PUBLISH with packet id 0",
         .publish(PublishPacket(topic: "t", payload: ByteBuffer(), qos: .atLeastOnce, packetID: 0)), .v3_1_1,
         .zeroPacketIdentifier),
        ("PUBACK with packet id 0", .puback(PubAckPacket(packetID: 0)), .v3_1_1, .zeroPacketIdentifier),
        ("PUBREC with packet id 0", .pubrec(PubRecPacket(packetID: 0)), .v3_1_1, .zeroPacketIdentifier),
        ("PUBREL with packet id 0", .pubrel(PubRelPacket(packetID: 0)), .v3_1_1, .zeroPacketIdentifier),
        ("PUBCOMP with packet id 0", .pubcomp(PubCompPacket(packetID: 0)), .v3_1_1, .zeroPacketIdentifier),
        ("SUBSCRIBE with packet id 0",
         .subscribe(SubscribePacket(packetID: 0, subscriptions: [.init(topicFilter: "a", qos: .atMostOnce)])), .v3_1_1,
         .zeroPacketIdentifier),
        ("SUBSCRIBE without filters", .subscribe(SubscribePacket(packetID: 1, subscriptions: [])), .v3_1_1,
         .subscribeWithoutFilters),
        ("UNSUBSCRIBE without filters", .unsubscribe(UnsubscribePacket(packetID: 1, topicFilters: [])), .v3_1_1,
         .unsubscribeWithoutFilters),
        ("SUBACK without return codes", .suback(SubAckPacket(packetID: 1, returnCodes: [])), .v3_1_1,
         .subAckWithoutReturnCodes),
        ("CONNECT password without user name", .connect(ConnectPacket(clientIdentifier: "c", password: [1])), .v3_1_1,
         .passwordWithoutUsername),
        ("CONNACK session present with a refusal",
         .connack(ConnAckPacket(sessionPresent: true, returnCode: .serverUnavailable)), .v3_1_1,
         .sessionPresentWithErrorReturnCode),
        // CONNECT is written in its own version whatever the connection's, so its MQTT 5 rules apply here.
        ("MQTT 5 CONNECT with a property CONNECT does not allow",
         .connect(ConnectPacket(protocolVersion: .v5, clientIdentifier: "c", properties: MQTTProperties([.topicAlias(1)]))),
         .v3_1_1, .propertyNotAllowed(.topicAlias, in: .connect)),
        ("a reason code PUBCOMP does not allow, on an MQTT 5 connection",
         .pubcomp(PubCompPacket(packetID: 1, reasonCode: .noMatchingSubscribers)), .v5,
         .invalidReasonCode(0x10, packetType: .pubcomp)),
    ]

    @Test("encoding fails with the specific error and leaves the buffer alone", arguments: cases.indices)
    func refused(_ index: Int) {
        let testCase = Self.cases[index]
        var buffer = ByteBuffer(bytes: [0x01, 0x02])
        let error = codecError {
            try MQTTPacketEncoder.encode(testCase.packet, protocolVersion: testCase.version, into: &buffer)
        }
        #expect(error == testCase.error, "\(testCase.name)")
        #expect(buffer.bytes == [0x01, 0x02], "\(testCase.name)")
    }
}
