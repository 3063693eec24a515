import MQTTCore
import NIOCore
import NIOEmbedded
import Testing

@testable import MQTTBroker

/// How a publisher paused by back-pressure treats its input, on real connection handlers over `EmbeddedChannel`s: the
/// read batch in progress goes on unless the congested queue is near its limit, later batches wait (read from the
/// socket up to a bound, not decoded), and the publishers of one session resume one at a time.
@Suite("Publisher pause (embedded)")
struct PublisherPauseTests {
    /// Window 1, queue limit 20: high watermark above 10 queued, halt above 15, low watermark at 5.
    func makeBroker() -> EmbeddedBroker {
        EmbeddedBroker { config in
            config.maxInflightMessages = 1
            config.maxQueuedMessages = 20
            config.backpressureStallTimeout = .seconds(10)
        }
    }

    /// A subscriber to `t` at QoS 1 that acknowledges nothing until told to.
    func subscriber(_ broker: EmbeddedBroker) throws -> EmbeddedClient {
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "sub"))
        try client.send(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "t", qos: .atLeastOnce)])))
        _ = try client.received()
        return client
    }

    /// Sends `packets` in one read batch (one `channelRead`, then `channelReadComplete`), as one socket read would
    /// deliver them.
    func sendBatch(_ client: EmbeddedClient, _ packets: [MQTTPacket]) throws {
        var buffer = ByteBuffer()
        for packet in packets {
            try MQTTPacketEncoder.encode(packet, into: &buffer)
        }
        try client.channel.writeInbound(buffer)
        client.channel.pipeline.fireChannelReadComplete()
    }

    /// PUBLISHes to `t` with the given packet identifiers, each carrying its identifier as payload.
    func publishes(_ ids: ClosedRange<UInt16>, qos: QoS = .atLeastOnce) -> [MQTTPacket] {
        ids.map { .publish(PublishPacket(topic: "t", payload: ByteBuffer(string: "\($0)"), qos: qos, packetID: $0)) }
    }

    /// Sends QoS 1 PUBLISHes to `t` with the given packet identifiers in one read batch.
    func publishBatch(_ client: EmbeddedClient, ids: ClosedRange<UInt16>) throws {
        try sendBatch(client, publishes(ids))
    }

    func pubackIDs(_ packets: [MQTTPacket]) -> [UInt16] {
        packets.compactMap {
            if case .puback(let ack) = $0 { return ack.packetID }
            return nil
        }
    }

    func handler(of client: EmbeddedClient) throws -> BrokerConnectionHandler {
        try client.channel.pipeline.syncOperations.handler(type: BrokerConnectionHandler.self)
    }

    /// Acknowledges the subscriber's deliveries one read batch at a time until `count` arrived or none is left.
    func drain(_ subscriber: EmbeddedClient, _ broker: EmbeddedBroker, upTo count: Int) throws -> [String] {
        var payloads: [String] = []
        var pending = try subscriber.receivedPublishes()
        while let publish = pending.first, payloads.count < count {
            pending.removeFirst()
            payloads.append(String(buffer: publish.payload))
            broker.advance(by: .milliseconds(1))  // a new read batch: its progress is reported
            try sendBatch(subscriber, [.puback(PubAckPacket(packetID: publish.packetID ?? 0))])
            pending += try subscriber.receivedPublishes()
        }
        return payloads
    }

    @Test("a publisher paused in the middle of a read batch finishes that batch; its next batch waits")
    func batchInProgressGoesOn() throws {
        let broker = makeBroker()
        let sub = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        // 1 in flight + 12 queued: the pause comes at the 11th queued, and the last two of the batch still go in.
        try publishBatch(pub, ids: 1...13)
        #expect(pubackIDs(try pub.received()) == Array(1...13))
        #expect(try handler(of: pub).isReadingPausedByCore)
        try publishBatch(pub, ids: 14...14)
        #expect(pubackIDs(try pub.received()).isEmpty)
        #expect(broker.core.statistics.publishDropped == 0)
        // The subscriber drains: the waiting batch is decoded once the queue is below the high watermark.
        let payloads = try drain(sub, broker, upTo: 14)
        #expect(payloads == (1...14).map(String.init))
        #expect(pubackIDs(try pub.received()) == [14])
        #expect(try !handler(of: pub).isReadingPausedByCore)
    }

    @Test("a paused publisher's PUBREL and PINGREQ are answered; a PUBLISH waits, and so does what follows it")
    func pausedPublisherKeepsItsWindowMoving() throws {
        let broker = makeBroker()
        _ = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        try sendBatch(pub, publishes(1...12, qos: .exactlyOnce))
        let recs = try pub.received().compactMap { if case .pubrec(let rec) = $0 { rec.packetID } else { nil } }
        #expect(recs == Array(1...12))
        #expect(try handler(of: pub).isReadingPausedByCore)
        // Paused: the releases of those twelve and a ping are answered; the PUBLISH after them waits, and so does
        // the ping behind it.
        let releases = (UInt16(1)...12).map { MQTTPacket.pubrel(PubRelPacket(packetID: $0)) }
        try sendBatch(pub, releases + [.pingreq(PingReqPacket())] + publishes(13...13, qos: .exactlyOnce) + [.pingreq(PingReqPacket())])
        let answers = try pub.received()
        let comps = answers.compactMap { if case .pubcomp(let comp) = $0 { comp.packetID } else { nil } }
        #expect(comps == Array(1...12))
        #expect(answers.filter { if case .pingresp = $0 { true } else { false } }.count == 1)
        #expect(!answers.contains { if case .pubrec = $0 { true } else { false } })
        #expect(try handler(of: pub).pendingInputBytes > 0)
    }

    @Test("above three quarters of the queue limit the batch in progress stops too: nothing is dropped")
    func nearTheLimitTheBatchHalts() throws {
        let broker = makeBroker()
        let sub = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        // 25 in one batch would take the queue past its limit of 20: it halts at 16 queued (1 in flight).
        try publishBatch(pub, ids: 1...25)
        #expect(pubackIDs(try pub.received()) == Array(1...17))
        #expect(broker.core.statistics.publishDropped == 0)
        let payloads = try drain(sub, broker, upTo: 25)
        #expect(payloads == (1...25).map(String.init))
        #expect(pubackIDs(try pub.received()) == Array(18...25))
        #expect(broker.core.statistics.publishDropped == 0)
    }

    @Test("a subscriber's read batch that takes the queue below the high watermark resumes a publisher in that batch")
    func resumeWithinTheBatchThatDrains() throws {
        let broker = EmbeddedBroker { config in
            config.maxInflightMessages = 4
            config.maxQueuedMessages = 20
            config.backpressureStallTimeout = .seconds(10)
        }
        let sub = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        try publishBatch(pub, ids: 1...16)  // 4 in flight, 12 queued: paused
        #expect(pubackIDs(try pub.received()) == Array(1...16))
        try publishBatch(pub, ids: 17...18)
        #expect(pubackIDs(try pub.received()).isEmpty)
        // One read batch acknowledging all four: the queue goes 11, 10, 9, 8. The first acknowledgement leaves it
        // above the high watermark (10); the second takes it below, and that resumes the publisher.
        let delivered = try sub.receivedPublishes()
        #expect(delivered.count == 4)
        broker.advance(by: .milliseconds(1))
        try sendBatch(sub, delivered.map { .puback(PubAckPacket(packetID: $0.packetID ?? 0)) })
        #expect(pubackIDs(try pub.received()) == [17, 18])
    }

    @Test("once halted, the rest of the batch is still answered up to its next PUBLISH")
    func haltedBatchStopsAtItsNextPublish() throws {
        let broker = makeBroker()
        _ = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        // 1 in flight + 16 queued halts the batch (above 15); the ping behind it is answered, PUBLISH 18 waits.
        try sendBatch(pub, publishes(1...17) + [.pingreq(PingReqPacket())] + publishes(18...18))
        let answers = try pub.received()
        #expect(pubackIDs(answers) == Array(1...17))
        #expect(answers.contains { if case .pingresp = $0 { true } else { false } })
        #expect(try handler(of: pub).readPause.isDecodingHalted)
        #expect(broker.core.statistics.publishDropped == 0)
    }

    @Test("a paused publisher's socket is still read up to the paused-input bound, then no longer; resuming reads it again")
    func socketReadsStopAtTheBound() throws {
        let broker = makeBroker()
        let sub = try subscriber(broker)
        let (pub, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        try publishBatch(pub, ids: 1...12)
        #expect(pubackIDs(try pub.received()) == Array(1...12))
        let handler = try handler(of: pub)
        #expect(handler.isReadingPausedByCore && !handler.readPause.isSocketPaused)
        // Below the bound the input waits in the connection, and the socket is still read.
        var id: UInt16 = 13
        while handler.pendingInputBytes + 1024 < ReadPause.inputLimit {
            try publishBatch(pub, ids: id...id + 7)
            id += 8
            #expect(!handler.readPause.isSocketPaused)
        }
        #expect(handler.pendingInputBytes > 0)
        // Past it, the socket is no longer read.
        try pub.send(.publish(PublishPacket(topic: "t", payload: ByteBuffer(repeating: 0x61, count: 2048), qos: .atLeastOnce, packetID: id)))
        #expect(handler.readPause.isSocketPaused)
        #expect(pubackIDs(try pub.received()).isEmpty)
        // The congested session goes away (its clean-session subscriber drops): the publisher resumes, decodes what
        // waited and reads its socket again.
        sub.dropConnection()
        #expect(pubackIDs(try pub.received()) == Array(13...id))
        #expect(!handler.isReadingPausedByCore && !handler.readPause.isSocketPaused)
    }
}
