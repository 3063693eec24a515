import MQTTCore
import NIOCore

/// One packet with its hand-written wire form (from the figures of MQTT 3.1.1 chapter 3).
struct GoldenPacket: Sendable, CustomStringConvertible {
    var name: String
    var packet: MQTTPacket
    var bytes: [UInt8]
    var description: String { name }
}

/// Every packet type at least once, written out byte by byte without the codec's help.
let goldenPackets: [GoldenPacket] = [
    GoldenPacket(
        // Variable header of the spec's example in 3.1.2.10 (flags 0xCE, keep alive 10) with a full payload.
        name: "CONNECT 3.1.2.10 example with will, user name and password",
        packet: .connect(
            ConnectPacket(
                protocolVersion: .v3_1_1, cleanSession: true, keepAliveSeconds: 10, clientIdentifier: "id",
                will: .init(topic: "w/t", payload: payload("bye"), qos: .atLeastOnce, retain: false),
                username: "u", password: [0x70, 0x77])),
        bytes: [
            0x10, 0x1F,
            0x00, 0x04, 0x4D, 0x51, 0x54, 0x54,  // "MQTT"
            0x04,  // level 4
            0xCE,  // user name, password, will QoS 1, will flag, clean session
            0x00, 0x0A,  // keep alive 10
            0x00, 0x02, 0x69, 0x64,  // client id "id"
            0x00, 0x03, 0x77, 0x2F, 0x74,  // will topic "w/t"
            0x00, 0x03, 0x62, 0x79, 0x65,  // will message "bye"
            0x00, 0x01, 0x75,  // user name "u"
            0x00, 0x02, 0x70, 0x77,  // password "pw"
        ]),
    GoldenPacket(
        name: "CONNECT minimal, clean session, empty client id",
        packet: .connect(ConnectPacket(keepAliveSeconds: 60, clientIdentifier: "")),
        bytes: [0x10, 0x0C, 0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, 0x02, 0x00, 0x3C, 0x00, 0x00]),
    GoldenPacket(
        name: "CONNECT MQTT 3.1 (MQIsdp, level 3), will retain QoS 2, session kept",
        packet: .connect(
            ConnectPacket(
                protocolVersion: .v3_1, cleanSession: false, keepAliveSeconds: 0x1234, clientIdentifier: "abc",
                will: .init(topic: "t", payload: ByteBuffer(), qos: .exactlyOnce, retain: true))),
        bytes: [
            0x10, 0x16,
            0x00, 0x06, 0x4D, 0x51, 0x49, 0x73, 0x64, 0x70,  // "MQIsdp"
            0x03,  // level 3
            0x34,  // will retain, will QoS 2, will flag
            0x12, 0x34,
            0x00, 0x03, 0x61, 0x62, 0x63,  // "abc"
            0x00, 0x01, 0x74,  // will topic "t"
            0x00, 0x00,  // empty will message
        ]),
    GoldenPacket(
        name: "CONNACK session present, accepted",
        packet: .connack(ConnAckPacket(sessionPresent: true, returnCode: .accepted)),
        bytes: [0x20, 0x02, 0x01, 0x00]),
    GoldenPacket(
        name: "CONNACK not authorized",
        packet: .connack(ConnAckPacket(sessionPresent: false, returnCode: .notAuthorized)),
        bytes: [0x20, 0x02, 0x00, 0x05]),
    GoldenPacket(
        name: "PUBLISH QoS 0 retained",
        packet: .publish(PublishPacket(topic: "a/b", payload: payload("hi"), qos: .atMostOnce, retain: true)),
        bytes: [0x31, 0x07, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x68, 0x69]),
    GoldenPacket(
        name: "PUBLISH QoS 1 with packet id 10",
        packet: .publish(PublishPacket(topic: "a/b", payload: payload("hi"), qos: .atLeastOnce, packetID: 10)),
        bytes: [0x32, 0x09, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x00, 0x0A, 0x68, 0x69]),
    GoldenPacket(
        name: "PUBLISH QoS 2 DUP, empty payload",
        packet: .publish(
            PublishPacket(topic: "x", payload: ByteBuffer(), qos: .exactlyOnce, dup: true, packetID: 0xBEEF)),
        bytes: [0x3C, 0x05, 0x00, 0x01, 0x78, 0xBE, 0xEF]),
    GoldenPacket(
        name: "PUBACK", packet: .puback(PubAckPacket(packetID: 10)), bytes: [0x40, 0x02, 0x00, 0x0A]),
    GoldenPacket(
        name: "PUBREC", packet: .pubrec(PubRecPacket(packetID: 0x0102)), bytes: [0x50, 0x02, 0x01, 0x02]),
    GoldenPacket(
        name: "PUBREL (flags 0b0010)", packet: .pubrel(PubRelPacket(packetID: 0x0102)),
        bytes: [0x62, 0x02, 0x01, 0x02]),
    GoldenPacket(
        name: "PUBCOMP", packet: .pubcomp(PubCompPacket(packetID: 0xFFFF)), bytes: [0x70, 0x02, 0xFF, 0xFF]),
    GoldenPacket(
        name: "SUBSCRIBE two filters (flags 0b0010)",
        packet: .subscribe(
            SubscribePacket(
                packetID: 10,
                subscriptions: [.init(topicFilter: "a/b", qos: .atLeastOnce), .init(topicFilter: "#", qos: .exactlyOnce)])),
        bytes: [0x82, 0x0C, 0x00, 0x0A, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x01, 0x00, 0x01, 0x23, 0x02]),
    GoldenPacket(
        name: "SUBACK every return code",
        packet: .suback(
            SubAckPacket(packetID: 10, returnCodes: [.granted(.atMostOnce), .granted(.atLeastOnce), .granted(.exactlyOnce), .failure])),
        bytes: [0x90, 0x06, 0x00, 0x0A, 0x00, 0x01, 0x02, 0x80]),
    GoldenPacket(
        name: "UNSUBSCRIBE two filters (flags 0b0010)",
        packet: .unsubscribe(UnsubscribePacket(packetID: 11, topicFilters: ["a/b", "+/c"])),
        bytes: [0xA2, 0x0C, 0x00, 0x0B, 0x00, 0x03, 0x61, 0x2F, 0x62, 0x00, 0x03, 0x2B, 0x2F, 0x63]),
    GoldenPacket(
        name: "UNSUBACK", packet: .unsuback(UnsubAckPacket(packetID: 11)), bytes: [0xB0, 0x02, 0x00, 0x0B]),
    GoldenPacket(name: "PINGREQ", packet: .pingreq(PingReqPacket()), bytes: [0xC0, 0x00]),
    GoldenPacket(name: "PINGRESP", packet: .pingresp(PingRespPacket()), bytes: [0xD0, 0x00]),
    GoldenPacket(name: "DISCONNECT", packet: .disconnect(DisconnectPacket()), bytes: [0xE0, 0x00]),
]
