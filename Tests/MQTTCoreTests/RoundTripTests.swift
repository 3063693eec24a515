import MQTTCore
import NIOCore
import Testing

@Suite("Encode then decode gives the packet back")
struct RoundTripTests {
    static let longString = String(repeating: "x", count: 65_535)
    static let unicodeTopic = "chat/räume/😀/日本"

    static let packets: [MQTTPacket] = [
        .connect(ConnectPacket(clientIdentifier: "client-1")),
        .connect(ConnectPacket(cleanSession: false, keepAliveSeconds: 0, clientIdentifier: "persistent")),
        .connect(ConnectPacket(keepAliveSeconds: .max, clientIdentifier: longString)),
        .connect(ConnectPacket(clientIdentifier: "u", username: "", password: [])),
        .connect(ConnectPacket(clientIdentifier: "u", username: "ü-ser")),
        .connect(ConnectPacket(clientIdentifier: "p", username: "name", password: Array(repeating: 0xFF, count: 65_535))),
        .connect(
            ConnectPacket(
                clientIdentifier: "w",
                will: .init(topic: unicodeTopic, payload: ByteBuffer(repeating: 0, count: 65_535), qos: .exactlyOnce, retain: true))),
        .connect(ConnectPacket(clientIdentifier: "w0", will: .init(topic: "last/will", payload: ByteBuffer(), qos: .atMostOnce))),
        .connect(ConnectPacket(protocolVersion: .v3_1, cleanSession: true, clientIdentifier: "old-client")),
        .connack(ConnAckPacket(sessionPresent: false, returnCode: .accepted)),
        .publish(PublishPacket(topic: "t", payload: ByteBuffer())),
        .publish(PublishPacket(topic: longString, payload: payload("max topic"), qos: .atLeastOnce, packetID: 1)),
        .publish(PublishPacket(topic: unicodeTopic, payload: payload("ünïcode"), qos: .exactlyOnce, retain: true, dup: true, packetID: .max)),
        .publish(PublishPacket(topic: "/", payload: ByteBuffer(bytes: [0, 1, 2, 0xFF]), qos: .atLeastOnce, dup: true, packetID: 7)),
        .publish(PublishPacket(topic: "$SYS/broker/uptime", payload: payload("42"), retain: true)),
        .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: longString, qos: .atMostOnce)])),
        .subscribe(
            SubscribePacket(
                packetID: .max,
                subscriptions: [
                    .init(topicFilter: "#", qos: .atMostOnce), .init(topicFilter: "+", qos: .atLeastOnce),
                    .init(topicFilter: "+/+/#", qos: .exactlyOnce), .init(topicFilter: "/", qos: .atLeastOnce),
                    .init(topicFilter: "$SYS/#", qos: .atMostOnce), .init(topicFilter: unicodeTopic, qos: .exactlyOnce),
                ])),
        .suback(SubAckPacket(packetID: 2, returnCodes: Array(repeating: .failure, count: 300))),
        .unsubscribe(UnsubscribePacket(packetID: 3, topicFilters: ["a", "a/+", "a/#", "+/+", unicodeTopic])),
        .unsuback(UnsubAckPacket(packetID: .max)),
        .puback(PubAckPacket(packetID: 1)), .pubrec(PubRecPacket(packetID: 2)), .pubrel(PubRelPacket(packetID: 3)),
        .pubcomp(PubCompPacket(packetID: 4)), .pingreq(PingReqPacket()), .pingresp(PingRespPacket()),
        .disconnect(DisconnectPacket()),
    ] + ConnectReturnCode.allCases.map { .connack(ConnAckPacket(sessionPresent: $0 == .accepted, returnCode: $0)) }

    @Test("round trip", arguments: packets.indices)
    func roundTrip(_ index: Int) throws {
        let packet = Self.packets[index]
        #expect(try decodedSingle(try encoded(packet)) == packet)
    }

    /// Remaining lengths at each boundary of the variable byte integer, with their encodings from 2.2.3.
    static let boundaries: [(remainingLength: Int, encoding: [UInt8])] = [
        (0, [0x00]), (127, [0x7F]), (128, [0x80, 0x01]), (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
        (2_097_151, [0xFF, 0xFF, 0x7F]), (2_097_152, [0x80, 0x80, 0x80, 0x01]),
    ]

    @Test("remaining length at every variable byte integer boundary", arguments: boundaries.indices)
    func remainingLengthBoundaries(_ index: Int) throws {
        let (remainingLength, encoding) = Self.boundaries[index]
        guard remainingLength > 0 else {
            #expect(try encoded(.pingreq(PingReqPacket())) == [0xC0] + encoding)
            return
        }
        // QoS 0 PUBLISH to "t": 3 bytes of topic, the rest payload.
        let packet = MQTTPacket.publish(
            PublishPacket(topic: "t", payload: ByteBuffer(repeating: 0x5A, count: remainingLength - 3)))
        let bytes = try encoded(packet)
        #expect(bytes.count == 1 + encoding.count + remainingLength)
        #expect(Array(bytes[1...encoding.count]) == encoding)
        #expect(try decodedSingle(bytes) == packet)
    }

    @Test("QoS 0 PUBLISH drops DUP and packet identifier, which the spec forbids at QoS 0")
    func qos0DropsDupAndPacketID() throws {
        let packet = PublishPacket(topic: "t", payload: payload("p"), qos: .atMostOnce, dup: true, packetID: 5)
        let bytes = try encoded(.publish(packet))
        #expect(bytes == [0x30, 0x04, 0x00, 0x01, 0x74, 0x70])
        #expect(try decodedSingle(bytes) == .publish(PublishPacket(topic: "t", payload: payload("p"))))
    }
}
