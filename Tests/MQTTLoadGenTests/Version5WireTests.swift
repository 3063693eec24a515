import MQTTCore
@testable import MQTTLoadGen
import NIOCore
import NIOEmbedded
import Testing

/// The MQTT 5 side of the generator without a network: templates, the scanner, and what a publisher makes of a v5
/// CONNACK and DISCONNECT.
@Suite("MQTT 5 wire forms of the load generator")
struct Version5WireTests {
    private func encodeV5(_ packets: [MQTTPacket]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        for packet in packets { try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer) }
        return buffer
    }

    private func stampedPayload(_ stamp: PayloadStamp, size: Int) -> ByteBuffer {
        var payload = ByteBuffer()
        stamp.write(into: &payload, payloadSize: size)
        return payload
    }

    /// A decoder for packets of an MQTT 5 connection.
    private func decoderV5() -> MQTTPacketDecoder {
        var decoder = MQTTPacketDecoder(acceptsVersion5: true)
        decoder.protocolVersion = .v5
        return decoder
    }

    @Test(
        "a v5 PUBLISH with properties is scanned past its property block to the stamp",
        arguments: [LoadGenConfig.DecodePath.scan, .full], QoS.allCases)
    func publishWithProperties(path: LoadGenConfig.DecodePath, qos: QoS) throws {
        let stamp = PayloadStamp(publisherIndex: 4, sequence: 1_234, sendTimeNanos: 987_654_321)
        let properties = MQTTProperties([
            .messageExpiryInterval(60), .contentType("application/octet-stream"),
            .userProperty(key: "key", value: String(repeating: "v", count: 200)),  // a property length of two bytes
        ])
        var buffer = try encodeV5([
            .connack(ConnAckPacket(reasonCode: .success, properties: MQTTProperties([.topicAliasMaximum(10), .receiveMaximum(20)]))),
            .publish(PublishPacket(
                topic: "room/7", payload: stampedPayload(stamp, size: 32), qos: qos,
                packetID: qos == .atMostOnce ? nil : 300, properties: properties)),
            .publish(PublishPacket(topic: "a", payload: stampedPayload(stamp, size: 16), qos: qos,
                packetID: qos == .atMostOnce ? nil : 301)),
            .puback(PubAckPacket(packetID: 5, reasonCode: .noMatchingSubscribers)),
            .pubrel(PubRelPacket(packetID: 6)),
            .disconnect(DisconnectPacket(reasonCode: .serverShuttingDown)),
        ])
        var scanner = InboundFrameScanner(path: path, protocolVersion: .v5)
        let connack = try scanner.next(from: &buffer)
        guard case .control(.connack(let decoded)) = connack else {
            Issue.record("expected CONNACK, got \(String(describing: connack))")
            return
        }
        #expect(decoded.properties.topicAliasMaximum == 10)
        #expect(decoded.properties.receiveMaximum == 20)
        let firstID: UInt16 = qos == .atMostOnce ? 0 : 300
        #expect(try scanner.next(from: &buffer) == .publish(qos: qos, packetID: firstID, stamp: stamp))
        #expect(try scanner.next(from: &buffer) == .publish(qos: qos, packetID: firstID == 0 ? 0 : 301, stamp: stamp))
        #expect(try scanner.next(from: &buffer) == .acknowledgement(.puback, packetID: 5))
        #expect(try scanner.next(from: &buffer) == .acknowledgement(.pubrel, packetID: 6))
        #expect(
            try scanner.next(from: &buffer) == .control(.disconnect(DisconnectPacket(reasonCode: .serverShuttingDown))))
        #expect(try scanner.next(from: &buffer) == nil)
        #expect(buffer.readableBytes == 0)
    }

    @Test("a v5 property block that runs past the packet is a typed error")
    func propertiesPastTheEnd() {
        // PUBLISH QoS 0, remaining length 5: topic "a", property length 9 (past the end), one byte; then PINGRESP.
        var buffer = ByteBuffer(bytes: [0x30, 0x05, 0x00, 0x01, 0x61, 0x09, 0x01, 0xD0, 0x00])
        var scanner = InboundFrameScanner(path: .scan, protocolVersion: .v5)
        #expect(throws: LoadGenError.self) { try scanner.next(from: &buffer) }
    }

    @Test("a v5 template patches the packet identifier before the property block, and scans back to its stamp")
    func templateRoundTrip() throws {
        let template = try PublishTemplate(
            topic: "bench/ab/fanout", qos: .atLeastOnce, payloadSize: 16, publisherIndex: 2, protocolVersion: .v5)
        // Fixed header 2, topic 2 + 15, packet identifier 2, property length 1, payload 16.
        #expect(template.size == 38)
        var buffer = ByteBuffer()
        template.write(into: &buffer, packetID: 0x1234, sequence: 7, sendTimeNanos: 99)
        var copy = buffer
        var decoder = decoderV5()
        let packet = try decoder.decode(from: &copy)
        guard case .publish(let publish) = packet else {
            Issue.record("expected PUBLISH, got \(String(describing: packet))")
            return
        }
        #expect(publish.topic == "bench/ab/fanout")
        #expect(publish.packetID == 0x1234)
        #expect(publish.properties.isEmpty)
        var scanner = InboundFrameScanner(path: .scan, protocolVersion: .v5)
        let stamp = PayloadStamp(publisherIndex: 2, sequence: 7, sendTimeNanos: 99)
        #expect(try scanner.next(from: &buffer) == .publish(qos: .atLeastOnce, packetID: 0x1234, stamp: stamp))
    }

    @Test("3.1.1 templates keep their size: one byte less than v5 (no property length)")
    func templateSizes311() throws {
        let template = try PublishTemplate(topic: "bench/ab/fanout", qos: .atLeastOnce, payloadSize: 16, publisherIndex: 0)
        #expect(template.size == 37)
    }

    @Test("topic alias templates: the first carries topic and alias, every later one only the alias")
    func aliasTemplates() throws {
        let topic = "bench/ab/fanout"
        let templates = try PublishTemplates(
            topic: topic, qos: .exactlyOnce, payloadSize: 16, publisherIndex: 1, protocolVersion: .v5,
            topicAlias: true)
        let first = try #require(templates.first)
        #expect(templates.withTopicSize == 38)
        #expect(first.size == 41)  // + Topic Alias property (identifier 0x23, two-byte value)
        #expect(templates.steady.size == 26)  // topic gone: 38 - 15 + 3
        #expect(templates.template(forMessage: 0).size == 41)
        #expect(templates.template(forMessage: 1).size == 26)
        #expect(templates.maximumSize == 41)

        var buffer = ByteBuffer()
        templates.template(forMessage: 0).write(into: &buffer, packetID: 10, sequence: 0, sendTimeNanos: 5)
        templates.template(forMessage: 1).write(into: &buffer, packetID: 11, sequence: 1, sendTimeNanos: 6)
        var decoder = decoderV5()
        let packets = [try decoder.decode(from: &buffer), try decoder.decode(from: &buffer)]
        guard case .publish(let firstPublish)? = packets[0], case .publish(let laterPublish)? = packets[1] else {
            Issue.record("expected two PUBLISH packets, got \(packets)")
            return
        }
        #expect(firstPublish.topic == topic)
        #expect(firstPublish.properties.topicAlias == 1)
        #expect(firstPublish.packetID == 10)
        #expect(laterPublish.topic == "")
        #expect(laterPublish.properties.topicAlias == 1)
        #expect(laterPublish.packetID == 11)
        #expect(PayloadStamp.read(from: laterPublish.payload, at: laterPublish.payload.readerIndex)
            == PayloadStamp(publisherIndex: 1, sequence: 1, sendTimeNanos: 6))
    }

    @Test("without topic aliases a v5 publisher has one template")
    func noAlias() throws {
        let templates = try PublishTemplates(
            topic: "t", qos: .atMostOnce, payloadSize: 16, publisherIndex: 0, protocolVersion: .v5, topicAlias: false)
        #expect(templates.first == nil)
        #expect(templates.steady.size == templates.withTopicSize)
        #expect(templates.steady.size == 2 + 3 + 1 + 16)
    }

    @Test("topic aliases need MQTT 5; 3.1 is not a bench protocol")
    func validation() {
        var config = LoadGenConfig(scenario: .fanout)
        config.topicAlias = true
        #expect(throws: LoadGenError.self) { try config.validated() }
        config.protocolVersion = .v5
        #expect(throws: Never.self) { try config.validated() }
        config.protocolVersion = .v3_1
        config.topicAlias = false
        #expect(throws: LoadGenError.self) { try config.validated() }
    }

    // MARK: A publisher on an embedded channel

    private func publisher(topicAlias: Bool) throws -> (EmbeddedChannel, LiveCounters) {
        let channel = EmbeddedChannel()
        let counters = LiveCounters()
        let ready = channel.embeddedEventLoop.makePromise(of: Void.self)
        let done = channel.embeddedEventLoop.makePromise(of: Void.self)
        let plan = PublisherPlan(
            topic: "t", qos: .atLeastOnce, payloadSize: 16, publisherIndex: 0, messageLimit: 1, rate: nil,
            inflight: 20, clientID: "c", keepAliveSeconds: 0, login: .init(), decodePath: .scan,
            protocolVersion: .v5, topicAlias: topicAlias)
        try channel.pipeline.syncOperations.addHandler(
            PublisherHandler(plan: plan, counters: counters, ready: ready, done: done))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1883)).wait()
        return (channel, counters)
    }

    @Test("a v5 publisher sends CONNECT at level 5 and reports a broker's DISCONNECT as an error")
    func serverDisconnect() throws {
        let (channel, counters) = try publisher(topicAlias: false)
        let connect = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(connect.getInteger(at: connect.readerIndex + 8, as: UInt8.self) == 5)  // after 0x10, length, "MQTT"
        try channel.writeInbound(try encodeV5([.connack(ConnAckPacket(reasonCode: .success))]))
        #expect(counters.failure == nil)
        #expect(channel.isActive)
        try channel.writeInbound(try encodeV5([
            .disconnect(DisconnectPacket(reasonCode: .serverShuttingDown, properties: MQTTProperties([.reasonString("bye")])))
        ]))
        #expect(counters.failure == .disconnectedByBroker(reasonCode: 0x8B, reason: "bye"))
        #expect(!channel.isActive)
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }

    @Test("topic aliases against a broker whose CONNACK allows none fail clearly")
    func aliasesRefused() throws {
        let (channel, counters) = try publisher(topicAlias: true)
        try channel.writeInbound(try encodeV5([.connack(ConnAckPacket(reasonCode: .success))]))
        #expect(counters.failure == .topicAliasesUnavailable(maximum: 0))
        #expect(!channel.isActive)
        _ = try? channel.finish(acceptAlreadyClosed: true)
    }
}
