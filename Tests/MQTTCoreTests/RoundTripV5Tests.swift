import MQTTCore
import NIOCore
import Testing

@Suite("MQTT 5: encode then decode gives the packet back")
struct RoundTripV5Tests {
    static let longString = String(repeating: "x", count: 65_535)

    static let packets: [MQTTPacket] = goldenPacketsV5.map(\.packet) + [
        .connect(
            ConnectPacket(
                protocolVersion: .v5, clientIdentifier: "c",
                will: .init(
                    topic: "will", payload: payload("gone"), qos: .exactlyOnce, retain: true,
                    properties: MQTTProperties([
                        .contentType("text/plain"), .responseTopic("reply/to"), .correlationData([1, 2, 3]),
                        .messageExpiryInterval(1), .userProperty(key: "", value: ""),
                    ])),
                username: "user",
                properties: MQTTProperties([
                    .authenticationMethod("PLAIN"), .authenticationData(Array(repeating: 0xAB, count: 65_535)),
                    .requestProblemInformation(true), .requestResponseInformation(false), .maximumPacketSize(.max),
                    .topicAliasMaximum(.max),
                ]))),
        .connack(
            ConnAckPacket(
                reasonCode: .useAnotherServer,
                properties: MQTTProperties([
                    .serverReference("other:1883"), .reasonString(longString), .serverKeepAlive(0),
                    .wildcardSubscriptionAvailable(false), .subscriptionIdentifierAvailable(true),
                    .sharedSubscriptionAvailable(false), .responseInformation("resp/"), .retainAvailable(true),
                ]))),
        .publish(
            PublishPacket(
                topic: "t", payload: ByteBuffer(bytes: [0, 0xFF]), qos: .exactlyOnce, dup: true, packetID: .max,
                properties: MQTTProperties(
                    (1...50).map { .subscriptionIdentifier($0 * 5_000_000) } + [.payloadFormatIndicator(0)]))),
        .publish(PublishPacket(topic: "a", payload: ByteBuffer(repeating: 7, count: 100_000))),
        .subscribe(
            SubscribePacket(
                packetID: 9,
                subscriptions: SubscribePacket.RetainHandling.allCases.map {
                    .init(topicFilter: "r/\($0.rawValue)", qos: .exactlyOnce, retainAsPublished: true, retainHandling: $0)
                } + [.init(topicFilter: "$share/group/x", qos: .atLeastOnce)])),
        .suback(SubAckPacket(packetID: 2, reasonCodes: Array(repeating: .quotaExceeded, count: 300))),
        .unsuback(
            UnsubAckPacket(
                packetID: 7, reasonCodes: [.topicFilterInvalid, .packetIdentifierInUse, .implementationSpecificError],
                properties: MQTTProperties([.reasonString("no")]))),
        .disconnect(DisconnectPacket(reasonCode: .sessionTakenOver)),
        .disconnect(DisconnectPacket(properties: MQTTProperties([.sessionExpiryInterval(0)]))),
        .puback(PubAckPacket(packetID: 1, properties: MQTTProperties([.reasonString("")]))),
    ]

    @Test("round trip", arguments: packets.indices)
    func roundTrip(_ index: Int) throws {
        let packet = Self.packets[index]
        let bytes = try encodedV5(packet)
        #expect(try decodedSingle(bytes, decoder: version5Decoder()) == packet)
    }

    @Test("AUTH round trips", arguments: [
        AuthPacket(), AuthPacket(reasonCode: .reAuthenticate, properties: MQTTProperties([.authenticationMethod("x")])),
        AuthPacket(
            reasonCode: .success,
            properties: MQTTProperties([
                .authenticationMethod("SCRAM-SHA-1"), .authenticationData([0]), .reasonString("ok"),
                .userProperty(key: "a", value: "b"),
            ])),
    ])
    func authRoundTrip(_ packet: AuthPacket) throws {
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(packet, into: &buffer)
        #expect(try decodedV5(buffer.bytes) == .auth(packet))
    }
}
