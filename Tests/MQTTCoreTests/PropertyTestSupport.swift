import MQTTCore
import NIOCore

private typealias W = Wire

/// One property list with its hand-written bytes (identifier and value, MQTT 5.0 section 2.2.2.2) and a context
/// that allows it.
struct GoldenProperty: Sendable, CustomStringConvertible {
    var name: String
    var properties: [MQTTProperty]
    var bytes: [UInt8]
    var context: MQTTPropertyContext
    var description: String { name }
}

/// Every property identifier of table 2-4 at least once, values at the edges of their types.
let goldenProperties: [GoldenProperty] = [
    .init(name: "0x01 payload format indicator", properties: [.payloadFormatIndicator(1)], bytes: [0x01, 0x01], context: .publish),
    .init(name: "0x02 message expiry interval", properties: [.messageExpiryInterval(0x1234_5678)],
          bytes: [0x02, 0x12, 0x34, 0x56, 0x78], context: .publish),
    .init(name: "0x03 content type", properties: [.contentType("json")], bytes: [0x03, 0x00, 0x04, 0x6A, 0x73, 0x6F, 0x6E],
          context: .will),
    .init(name: "0x08 response topic", properties: [.responseTopic("r/1")], bytes: [0x08, 0x00, 0x03, 0x72, 0x2F, 0x31],
          context: .publish),
    .init(name: "0x09 correlation data", properties: [.correlationData([0x00, 0xFF])], bytes: [0x09, 0x00, 0x02, 0x00, 0xFF],
          context: .publish),
    .init(name: "0x0B subscription identifier, largest (four-byte variable byte integer)",
          properties: [.subscriptionIdentifier(268_435_455)], bytes: [0x0B, 0xFF, 0xFF, 0xFF, 0x7F], context: .subscribe),
    .init(name: "0x0B subscription identifier repeated in PUBLISH",
          properties: [.subscriptionIdentifier(1), .subscriptionIdentifier(128)], bytes: [0x0B, 0x01, 0x0B, 0x80, 0x01],
          context: .publish),
    .init(name: "0x11 session expiry interval", properties: [.sessionExpiryInterval(.max)],
          bytes: [0x11, 0xFF, 0xFF, 0xFF, 0xFF], context: .connect),
    .init(name: "0x12 assigned client identifier", properties: [.assignedClientIdentifier("x")],
          bytes: [0x12, 0x00, 0x01, 0x78], context: .connack),
    .init(name: "0x13 server keep alive", properties: [.serverKeepAlive(300)], bytes: [0x13, 0x01, 0x2C], context: .connack),
    .init(name: "0x15 authentication method", properties: [.authenticationMethod("SCRAM")],
          bytes: [0x15, 0x00, 0x05, 0x53, 0x43, 0x52, 0x41, 0x4D], context: .connect),
    .init(name: "0x16 authentication data after its method", properties: [.authenticationMethod("m"), .authenticationData([7])],
          bytes: [0x15, 0x00, 0x01, 0x6D, 0x16, 0x00, 0x01, 0x07], context: .auth),
    .init(name: "0x17 request problem information", properties: [.requestProblemInformation(false)], bytes: [0x17, 0x00],
          context: .connect),
    .init(name: "0x18 will delay interval", properties: [.willDelayInterval(30)], bytes: [0x18, 0x00, 0x00, 0x00, 0x1E],
          context: .will),
    .init(name: "0x19 request response information", properties: [.requestResponseInformation(true)], bytes: [0x19, 0x01],
          context: .connect),
    .init(name: "0x1A response information", properties: [.responseInformation("ri")], bytes: [0x1A, 0x00, 0x02, 0x72, 0x69],
          context: .connack),
    .init(name: "0x1C server reference", properties: [.serverReference("h:1")], bytes: [0x1C, 0x00, 0x03, 0x68, 0x3A, 0x31],
          context: .disconnect),
    .init(name: "0x1F reason string", properties: [.reasonString("why")], bytes: [0x1F, 0x00, 0x03, 0x77, 0x68, 0x79],
          context: .pubrel),
    .init(name: "0x21 receive maximum", properties: [.receiveMaximum(65_535)], bytes: [0x21, 0xFF, 0xFF], context: .connect),
    .init(name: "0x22 topic alias maximum 0", properties: [.topicAliasMaximum(0)], bytes: [0x22, 0x00, 0x00], context: .connect),
    .init(name: "0x23 topic alias", properties: [.topicAlias(65_535)], bytes: [0x23, 0xFF, 0xFF], context: .publish),
    .init(name: "0x24 maximum QoS", properties: [.maximumQoS(0)], bytes: [0x24, 0x00], context: .connack),
    .init(name: "0x25 retain available", properties: [.retainAvailable(false)], bytes: [0x25, 0x00], context: .connack),
    .init(name: "0x26 user properties, repeated, order kept",
          properties: [.userProperty(key: "b", value: "1"), .userProperty(key: "a", value: "2"), .userProperty(key: "b", value: "1")],
          bytes: [0x26, 0x00, 0x01, 0x62, 0x00, 0x01, 0x31, 0x26, 0x00, 0x01, 0x61, 0x00, 0x01, 0x32,
                  0x26, 0x00, 0x01, 0x62, 0x00, 0x01, 0x31],
          context: .unsuback),
    .init(name: "0x27 maximum packet size", properties: [.maximumPacketSize(1024)], bytes: [0x27, 0x00, 0x00, 0x04, 0x00],
          context: .connack),
    .init(name: "0x28 wildcard subscription available", properties: [.wildcardSubscriptionAvailable(true)], bytes: [0x28, 0x01],
          context: .connack),
    .init(name: "0x29 subscription identifier available", properties: [.subscriptionIdentifierAvailable(false)],
          bytes: [0x29, 0x00], context: .connack),
    .init(name: "0x2A shared subscription available", properties: [.sharedSubscriptionAvailable(true)], bytes: [0x2A, 0x01],
          context: .connack),
]

/// The smallest packet of each context carrying a property block, as bytes (built from the property bytes by hand)
/// and as the packet the decoder must produce. AUTH is returned as nil packet: compare with ``authWithProperties``.
enum PropertyCarrier {
    /// The property length and the properties.
    static func block(_ properties: [UInt8]) -> [UInt8] { W.remainingLength(properties.count) + properties }

    static func bytes(_ context: MQTTPropertyContext, _ properties: [UInt8]) -> [UInt8] {
        let block = block(properties)
        switch context {
        case .connect: return W.packet(0x10, W.connectHeader(flags: 0x02, level: 5) + block + W.string("c"))
        case .will:
            return W.packet(0x10, W.connectHeader(flags: 0x06, level: 5) + [0x00] + W.string("c") + block + W.string("w") + W.bytes([]))
        case .connack: return W.packet(0x20, [0x00, 0x00] + block)
        case .publish: return W.packet(0x30, W.string("t") + block)
        case .puback: return W.packet(0x40, W.uint16(1) + [0x00] + block)
        case .pubrec: return W.packet(0x50, W.uint16(1) + [0x00] + block)
        case .pubrel: return W.packet(0x62, W.uint16(1) + [0x00] + block)
        case .pubcomp: return W.packet(0x70, W.uint16(1) + [0x00] + block)
        case .subscribe: return W.packet(0x82, W.uint16(1) + block + W.string("a") + [0x00])
        case .suback: return W.packet(0x90, W.uint16(1) + block + [0x00])
        case .unsubscribe: return W.packet(0xA2, W.uint16(1) + block + W.string("a"))
        case .unsuback: return W.packet(0xB0, W.uint16(1) + block + [0x00])
        case .disconnect: return W.packet(0xE0, [0x00] + block)
        case .auth: return W.packet(0xF0, [0x18] + block)
        }
    }

    static func packet(_ context: MQTTPropertyContext, _ properties: [MQTTProperty]) -> MQTTPacket? {
        let list = MQTTProperties(properties)
        switch context {
        case .connect: return .connect(ConnectPacket(protocolVersion: .v5, keepAliveSeconds: 60, clientIdentifier: "c", properties: list))
        case .will:
            return .connect(
                ConnectPacket(
                    protocolVersion: .v5, keepAliveSeconds: 60, clientIdentifier: "c",
                    will: .init(topic: "w", payload: ByteBuffer(), properties: list)))
        case .connack: return .connack(ConnAckPacket(reasonCode: .success, properties: list))
        case .publish: return .publish(PublishPacket(topic: "t", payload: ByteBuffer(), properties: list))
        case .puback: return .puback(PubAckPacket(packetID: 1, properties: list))
        case .pubrec: return .pubrec(PubRecPacket(packetID: 1, properties: list))
        case .pubrel: return .pubrel(PubRelPacket(packetID: 1, properties: list))
        case .pubcomp: return .pubcomp(PubCompPacket(packetID: 1, properties: list))
        case .subscribe:
            return .subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "a", qos: .atMostOnce)], properties: list))
        case .suback: return .suback(SubAckPacket(packetID: 1, reasonCodes: [.grantedQoS0], properties: list))
        case .unsubscribe: return .unsubscribe(UnsubscribePacket(packetID: 1, topicFilters: ["a"], properties: list))
        case .unsuback: return .unsuback(UnsubAckPacket(packetID: 1, reasonCodes: [.success], properties: list))
        case .disconnect: return .disconnect(DisconnectPacket(properties: list))
        case .auth: return nil
        }
    }

    /// The AUTH packet ``bytes(_:_:)`` builds for `.auth`.
    static func authWithProperties(_ properties: [MQTTProperty]) -> AuthPacket {
        AuthPacket(reasonCode: .continueAuthentication, properties: MQTTProperties(properties))
    }
}

/// Decodes `bytes` (exactly one packet, AUTH included) with an MQTT 5 decoder.
func decodedV5(_ bytes: [UInt8]) throws -> MQTTDecodedPacket? {
    var decoder = version5Decoder()
    var buffer = ByteBuffer(bytes: bytes)
    let packet = try decoder.decodePacketOrAuth(from: &buffer)
    if packet != nil, buffer.readableBytes != 0 { throw TestFailure.trailingBytes(buffer.readableBytes) }
    return packet
}

/// A failure of the test support itself.
enum TestFailure: Error { case trailingBytes(Int) }
