import MQTTCore
import NIOCore

/// A decoder for an MQTT 5 connection: MQTT 5 accepted and negotiated.
func version5Decoder() -> MQTTPacketDecoder {
    var decoder = MQTTPacketDecoder(acceptsVersion5: true)
    decoder.protocolVersion = .v5
    return decoder
}

/// Encodes `packet` for an MQTT 5 connection.
func encodedV5(_ packet: MQTTPacket) throws -> [UInt8] {
    var buffer = ByteBuffer()
    try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer)
    return buffer.bytes
}

/// Every MQTT 5 packet type at least once, with the forms the spec lets a field be left out in, written out byte by
/// byte from MQTT 5.0 chapter 3 without the codec's help. AUTH is in ``goldenAuthPackets`` (``MQTTPacket`` has no
/// case for it).
let goldenPacketsV5: [GoldenPacket] = [
    GoldenPacket(
        name: "CONNECT v5 with properties, will properties, user name and password",
        packet: .connect(
            ConnectPacket(
                protocolVersion: .v5, cleanSession: true, keepAliveSeconds: 10, clientIdentifier: "id",
                will: .init(
                    topic: "w/t", payload: payload("bye"), qos: .atLeastOnce,
                    properties: MQTTProperties([.willDelayInterval(5), .payloadFormatIndicator(1)])),
                username: "u", password: [0x70, 0x77],
                properties: MQTTProperties([
                    .sessionExpiryInterval(0x78), .receiveMaximum(20), .userProperty(key: "k", value: "v"),
                ]))),
        bytes: [
            0x10, 0x37,
            0x00, 0x04, 0x4D, 0x51, 0x54, 0x54,  // "MQTT"
            0x05,  // level 5
            0xCE,  // user name, password, will QoS 1, will flag, clean start
            0x00, 0x0A,  // keep alive 10
            0x0F,  // property length 15
            0x11, 0x00, 0x00, 0x00, 0x78,  // session expiry interval 120
            0x21, 0x00, 0x14,  // receive maximum 20
            0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x76,  // user property k=v
            0x00, 0x02, 0x69, 0x64,  // client id "id"
            0x07,  // will property length 7
            0x18, 0x00, 0x00, 0x00, 0x05,  // will delay interval 5
            0x01, 0x01,  // payload format indicator: UTF-8
            0x00, 0x03, 0x77, 0x2F, 0x74,  // will topic "w/t"
            0x00, 0x03, 0x62, 0x79, 0x65,  // will payload "bye"
            0x00, 0x01, 0x75,  // user name "u"
            0x00, 0x02, 0x70, 0x77,  // password "pw"
        ]),
    GoldenPacket(
        name: "CONNECT v5: empty client id without clean start, password without user name",
        packet: .connect(
            ConnectPacket(
                protocolVersion: .v5, cleanSession: false, keepAliveSeconds: 60, clientIdentifier: "", password: [1])),
        bytes: [
            0x10, 0x10, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x05,
            0x40,  // password only
            0x00, 0x3C, 0x00,  // keep alive 60, no properties
            0x00, 0x00,  // empty client id
            0x00, 0x01, 0x01,  // password
        ]),
    GoldenPacket(
        name: "CONNACK v5 session present with properties",
        packet: .connack(
            ConnAckPacket(
                sessionPresent: true, reasonCode: .success,
                properties: MQTTProperties([.topicAliasMaximum(10), .assignedClientIdentifier("a"), .maximumQoS(1)]))),
        bytes: [
            0x20, 0x0C, 0x01, 0x00, 0x09,
            0x22, 0x00, 0x0A,  // topic alias maximum 10
            0x12, 0x00, 0x01, 0x61,  // assigned client identifier "a"
            0x24, 0x01,  // maximum QoS 1
        ]),
    GoldenPacket(
        name: "CONNACK v5 refused: banned",
        packet: .connack(ConnAckPacket(reasonCode: .banned)),
        bytes: [0x20, 0x03, 0x00, 0x8A, 0x00]),
    GoldenPacket(
        name: "PUBLISH v5 QoS 1 retained with properties",
        packet: .publish(
            PublishPacket(
                topic: "a/b", payload: payload("hi"), qos: .atLeastOnce, retain: true, packetID: 10,
                properties: MQTTProperties([
                    .messageExpiryInterval(60), .contentType("t"), .subscriptionIdentifier(200),
                ]))),
        bytes: [
            0x33, 0x16,
            0x00, 0x03, 0x61, 0x2F, 0x62,  // topic "a/b"
            0x00, 0x0A,  // packet identifier 10
            0x0C,  // property length 12
            0x02, 0x00, 0x00, 0x00, 0x3C,  // message expiry interval 60
            0x03, 0x00, 0x01, 0x74,  // content type "t"
            0x0B, 0xC8, 0x01,  // subscription identifier 200 (two-byte variable byte integer)
            0x68, 0x69,  // payload "hi"
        ]),
    GoldenPacket(
        name: "PUBLISH v5 QoS 0 with an empty topic and a topic alias",
        packet: .publish(
            PublishPacket(topic: "", payload: ByteBuffer(), properties: MQTTProperties([.topicAlias(1)]))),
        bytes: [0x30, 0x06, 0x00, 0x00, 0x03, 0x23, 0x00, 0x01]),
    GoldenPacket(
        name: "PUBACK v5 success without properties (remaining length 2)",
        packet: .puback(PubAckPacket(packetID: 1)),
        bytes: [0x40, 0x02, 0x00, 0x01]),
    GoldenPacket(
        name: "PUBACK v5 reason code without properties (remaining length 3)",
        packet: .puback(PubAckPacket(packetID: 2, reasonCode: .noMatchingSubscribers)),
        bytes: [0x40, 0x03, 0x00, 0x02, 0x10]),
    GoldenPacket(
        name: "PUBREC v5 quota exceeded with a reason string",
        packet: .pubrec(
            PubRecPacket(packetID: 3, reasonCode: .quotaExceeded, properties: MQTTProperties([.reasonString("q")]))),
        bytes: [0x50, 0x08, 0x00, 0x03, 0x97, 0x04, 0x1F, 0x00, 0x01, 0x71]),
    GoldenPacket(
        name: "PUBREL v5 packet identifier not found",
        packet: .pubrel(PubRelPacket(packetID: 4, reasonCode: .packetIdentifierNotFound)),
        bytes: [0x62, 0x03, 0x00, 0x04, 0x92]),
    GoldenPacket(
        name: "PUBCOMP v5 success with a user property",
        packet: .pubcomp(
            PubCompPacket(packetID: 5, properties: MQTTProperties([.userProperty(key: "a", value: "b")]))),
        bytes: [0x70, 0x0B, 0x00, 0x05, 0x00, 0x07, 0x26, 0x00, 0x01, 0x61, 0x00, 0x01, 0x62]),
    GoldenPacket(
        name: "SUBSCRIBE v5 with subscription identifier and every option",
        packet: .subscribe(
            SubscribePacket(
                packetID: 1,
                subscriptions: [
                    .init(
                        topicFilter: "a/#", qos: .atLeastOnce, noLocal: true, retainAsPublished: true,
                        retainHandling: .doNotSend),
                    .init(topicFilter: "b", qos: .atMostOnce),
                ],
                properties: MQTTProperties([.subscriptionIdentifier(5)]))),
        bytes: [
            0x82, 0x0F, 0x00, 0x01,
            0x02, 0x0B, 0x05,  // subscription identifier 5
            0x00, 0x03, 0x61, 0x2F, 0x23,
            0x2D,  // retain handling 2, retain as published, no local, QoS 1
            0x00, 0x01, 0x62, 0x00,
        ]),
    GoldenPacket(
        name: "SUBACK v5 with a reason string and mixed reason codes",
        packet: .suback(
            SubAckPacket(
                packetID: 1, reasonCodes: [.grantedQoS1, .notAuthorized, .wildcardSubscriptionsNotSupported],
                properties: MQTTProperties([.reasonString("x")]))),
        bytes: [0x90, 0x0A, 0x00, 0x01, 0x04, 0x1F, 0x00, 0x01, 0x78, 0x01, 0x87, 0xA2]),
    GoldenPacket(
        name: "UNSUBSCRIBE v5 with a user property",
        packet: .unsubscribe(
            UnsubscribePacket(
                packetID: 2, topicFilters: ["a", "b/+"],
                properties: MQTTProperties([.userProperty(key: "k", value: "v")]))),
        bytes: [
            0xA2, 0x12, 0x00, 0x02,
            0x07, 0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x76,
            0x00, 0x01, 0x61, 0x00, 0x03, 0x62, 0x2F, 0x2B,
        ]),
    GoldenPacket(
        name: "UNSUBACK v5 with one reason code per filter",
        packet: .unsuback(UnsubAckPacket(packetID: 2, reasonCodes: [.success, .noSubscriptionExisted])),
        bytes: [0xB0, 0x05, 0x00, 0x02, 0x00, 0x00, 0x11]),
    GoldenPacket(name: "PINGREQ v5", packet: .pingreq(PingReqPacket()), bytes: [0xC0, 0x00]),
    GoldenPacket(name: "PINGRESP v5", packet: .pingresp(PingRespPacket()), bytes: [0xD0, 0x00]),
    GoldenPacket(
        name: "DISCONNECT v5 normal (remaining length 0)", packet: .disconnect(DisconnectPacket()),
        bytes: [0xE0, 0x00]),
    GoldenPacket(
        name: "DISCONNECT v5 with will message (remaining length 1)",
        packet: .disconnect(DisconnectPacket(reasonCode: .disconnectWithWillMessage)),
        bytes: [0xE0, 0x01, 0x04]),
    GoldenPacket(
        name: "DISCONNECT v5 server moved with a server reference",
        packet: .disconnect(
            DisconnectPacket(reasonCode: .serverMoved, properties: MQTTProperties([.serverReference("s")]))),
        bytes: [0xE0, 0x06, 0x9D, 0x04, 0x1C, 0x00, 0x01, 0x73]),
]

/// AUTH packets with their hand-written wire form (MQTT 5.0 section 3.15).
let goldenAuthPackets: [(name: String, packet: AuthPacket, bytes: [UInt8])] = [
    ("AUTH success without properties (remaining length 0)", AuthPacket(), [0xF0, 0x00]),
    (
        "AUTH continue with method and data",
        AuthPacket(
            reasonCode: .continueAuthentication,
            properties: MQTTProperties([.authenticationMethod("m"), .authenticationData([1, 2])])),
        [0xF0, 0x0B, 0x18, 0x09, 0x15, 0x00, 0x01, 0x6D, 0x16, 0x00, 0x02, 0x01, 0x02]
    ),
]
