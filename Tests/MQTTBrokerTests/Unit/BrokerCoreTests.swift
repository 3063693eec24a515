import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The connection handler, the core and the state machines together on an embedded event loop with virtual time.
@Suite("Broker core over embedded channels")
struct BrokerCoreTests {
    func payload(_ string: String) -> ByteBuffer { ByteBuffer(string: string) }

    func subscribe(_ client: EmbeddedClient, _ filter: String, qos: QoS, id: UInt16 = 1) throws -> [MQTTPacket] {
        try client.send(.subscribe(SubscribePacket(packetID: id, subscriptions: [.init(topicFilter: filter, qos: qos)])))
        return try client.received()
    }

    @Test("a silent client is closed at 1.5 times its keepalive and its will is published")
    func keepaliveExpiryPublishesWill() throws {
        let broker = EmbeddedBroker()
        let will = ConnectPacket.Will(topic: "wills/a", payload: payload("a is gone"), qos: .atLeastOnce)
        let (silent, connack) = try broker.connect(ConnectPacket(keepAliveSeconds: 2, clientIdentifier: "a", will: will))
        #expect(connack?.returnCode == .accepted)
        let (watcher, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "w"))
        _ = try subscribe(watcher, "wills/#", qos: .atLeastOnce)

        broker.advance(by: .milliseconds(2999))
        #expect(silent.isActive)
        #expect(try watcher.receivedPublishes().isEmpty)
        broker.advance(by: .milliseconds(1))
        #expect(!silent.isActive)
        let wills = try watcher.receivedPublishes()
        #expect(wills.map(\.topic) == ["wills/a"])
        #expect(wills.first?.qos == .atLeastOnce)
        #expect(wills.first.map { String(buffer: $0.payload) } == "a is gone")
    }

    @Test("PINGREQ keeps the connection alive and is answered with PINGRESP")
    func pingKeepsAlive() throws {
        let broker = EmbeddedBroker()
        let (client, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 2, clientIdentifier: "p"))
        broker.advance(by: .seconds(2))
        try client.send(.pingreq(PingReqPacket()))
        #expect(try client.received() == [.pingresp(PingRespPacket())])
        broker.advance(by: .seconds(2))
        #expect(client.isActive)
        broker.advance(by: .seconds(1))
        #expect(!client.isActive)
    }

    @Test("no will after DISCONNECT; a will on socket loss honours its retain flag")
    func willOnlyWithoutDisconnect() throws {
        let broker = EmbeddedBroker()
        let (watcher, _) = try broker.connect(ConnectPacket(clientIdentifier: "w"))
        _ = try subscribe(watcher, "wills/+", qos: .atMostOnce)

        let polite = ConnectPacket(clientIdentifier: "polite", will: .init(topic: "wills/polite", payload: payload("x")))
        let (politeClient, _) = try broker.connect(polite)
        try politeClient.send(.disconnect(DisconnectPacket()))
        #expect(!politeClient.isActive)

        let rude = ConnectPacket(clientIdentifier: "rude", will: .init(topic: "wills/rude", payload: payload("y"), retain: true))
        let (rudeClient, _) = try broker.connect(rude)
        rudeClient.dropConnection()

        let received = try watcher.receivedPublishes()
        #expect(received.map(\.topic) == ["wills/rude"])
        #expect(received.first?.retain == false)
        #expect(broker.core.retainedStore.message(forTopic: "wills/rude") != nil)
    }

    @Test("a second connection with the same client identifier takes over its persistent session; no will, as mosquitto")
    func takeover() throws {
        let broker = EmbeddedBroker()
        let (watcher, _) = try broker.connect(ConnectPacket(clientIdentifier: "w"))
        _ = try subscribe(watcher, "wills/#", qos: .atMostOnce)

        let first = ConnectPacket(cleanSession: false, clientIdentifier: "dup", will: .init(topic: "wills/dup", payload: payload("old")))
        let (old, _) = try broker.connect(first)
        _ = try subscribe(old, "inbox/dup", qos: .atLeastOnce)

        let (new, connack) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: "dup"))
        #expect(!old.isActive)
        #expect(new.isActive)
        #expect(connack == ConnAckPacket(sessionPresent: true, returnCode: .accepted))
        // The session continues, so the client has not gone away: no will.
        #expect(try watcher.receivedPublishes().isEmpty)
        #expect(broker.core.connectedClientCount == 2)
        #expect(broker.core.sessionCount == 2)

        // The session (and its subscription) moved to the new connection.
        try watcher.send(.publish(PublishPacket(topic: "inbox/dup", payload: payload("hi"), qos: .atLeastOnce, packetID: 9)))
        #expect(try new.receivedPublishes().map { String(buffer: $0.payload) } == ["hi"])
    }

    @Test("a takeover that ends the session (the new connection asks for a clean one) publishes the old will")
    func takeoverEndingTheSession() throws {
        let broker = EmbeddedBroker()
        let (watcher, _) = try broker.connect(ConnectPacket(clientIdentifier: "w"))
        _ = try subscribe(watcher, "wills/#", qos: .atMostOnce)
        let first = ConnectPacket(cleanSession: false, clientIdentifier: "dup", will: .init(topic: "wills/dup", payload: payload("old")))
        let (old, _) = try broker.connect(first)
        let (new, connack) = try broker.connect(ConnectPacket(cleanSession: true, clientIdentifier: "dup"))
        #expect(!old.isActive && new.isActive)
        #expect(connack == ConnAckPacket(sessionPresent: false, returnCode: .accepted))
        #expect(try watcher.receivedPublishes().map { String(buffer: $0.payload) } == ["old"])
    }

    @Test("a re-sent QoS 2 PUBLISH is forwarded once; PUBREL is answered with PUBCOMP even for unknown ids")
    func inboundQoS2ExactlyOnce() throws {
        let broker = EmbeddedBroker()
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "s"))
        _ = try subscribe(subscriber, "q2", qos: .exactlyOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))

        let publish = PublishPacket(topic: "q2", payload: payload("once"), qos: .exactlyOnce, packetID: 5)
        try publisher.send(.publish(publish))
        var resent = publish
        resent.dup = true
        try publisher.send(.publish(resent))
        #expect(try publisher.received() == [.pubrec(PubRecPacket(packetID: 5)), .pubrec(PubRecPacket(packetID: 5))])
        try publisher.send(.pubrel(PubRelPacket(packetID: 5)))
        try publisher.send(.pubrel(PubRelPacket(packetID: 77)))
        #expect(try publisher.received() == [.pubcomp(PubCompPacket(packetID: 5)), .pubcomp(PubCompPacket(packetID: 77))])

        let delivered = try subscriber.receivedPublishes()
        #expect(delivered.count == 1)
        #expect(delivered.first?.qos == .exactlyOnce)
        // The same identifier after PUBREL is a new message.
        try publisher.send(.publish(publish))
        #expect(try subscriber.receivedPublishes().count == 1)
    }

    @Test("written output buffers are kept for reuse: at most 8, none above 32 KB, handed back empty")
    func outputBufferPool() {
        let core = EmbeddedBroker().core
        #expect(core.takeOutputBuffer() == nil)
        var large = core.allocator.buffer(capacity: 64 * 1024)
        large.writeString("too large to keep")
        core.recycleOutputBuffer(large)
        #expect(core.takeOutputBuffer() == nil)
        for batch in 0..<10 {
            var buffer = core.allocator.buffer(capacity: 512)
            buffer.writeString("batch \(batch)")
            core.recycleOutputBuffer(buffer)
        }
        var kept = 0
        while let buffer = core.takeOutputBuffer() {
            #expect(buffer.readableBytes == 0)
            #expect(buffer.capacity >= 512)
            kept += 1
        }
        #expect(kept == BrokerCore.maxSpareOutputBuffers)
    }

    @Test("a written output buffer handed back with its last reference keeps its storage: no new allocation")
    func recycledBufferKeepsItsStorage() throws {
        let core = EmbeddedBroker().core
        var buffer = core.allocator.buffer(capacity: 512)
        buffer.writeString("a written batch")
        let storage = buffer.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        core.recycleOutputBuffer(consume buffer)
        let reused = try #require(core.takeOutputBuffer())
        #expect(reused.readableBytes == 0)
        #expect(reused.withVeryUnsafeBytes { UInt(bitPattern: $0.baseAddress) } == storage)
    }

    @Test("an output buffer still held elsewhere when it is recycled is never overwritten")
    func recycledBufferStillHeldIsNotOverwritten() throws {
        let broker = EmbeddedBroker()
        // The embedded channel keeps every written buffer until it is read, so each buffer the core gets back
        // is still shared: the second batch must not change the first.
        let (subscriber, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "sub"))
        _ = try subscribe(subscriber, "t/#", qos: .atMostOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "pub"))
        try publisher.send(.publish(PublishPacket(topic: "t/a", payload: payload("first"))))
        broker.loop.run()
        // The first batch's buffer is back in the core, still held by the embedded channel.
        let spare = try #require(broker.core.takeOutputBuffer())
        broker.core.recycleOutputBuffer(spare)
        try publisher.send(.publish(PublishPacket(topic: "t/b", payload: payload("second"))))
        let delivered = try subscriber.receivedPublishes().map { "\($0.topic)=\(String(buffer: $0.payload))" }
        #expect(delivered == ["t/a=first", "t/b=second"])
    }

    @Test("outbound QoS 2: PUBREC is answered with PUBREL and PUBCOMP completes the exchange")
    func outboundQoS2() throws {
        let broker = EmbeddedBroker { $0.maxInflightMessages = 1 }
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "s"))
        _ = try subscribe(subscriber, "t", qos: .exactlyOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))
        try publisher.send(.publish(PublishPacket(topic: "t", payload: payload("1"), qos: .exactlyOnce, packetID: 1)))
        try publisher.send(.publish(PublishPacket(topic: "t", payload: payload("2"), qos: .exactlyOnce, packetID: 2)))
        let first = try subscriber.receivedPublishes()
        #expect(first.map { String(buffer: $0.payload) } == ["1"])
        let id = try #require(first.first?.packetID)
        try subscriber.send(.pubrec(PubRecPacket(packetID: id)))
        #expect(try subscriber.received() == [.pubrel(PubRelPacket(packetID: id))])
        try subscriber.send(.pubcomp(PubCompPacket(packetID: id)))
        #expect(try subscriber.receivedPublishes().map { String(buffer: $0.payload) } == ["2"])
    }

    @Test("the inflight window holds back QoS 1 messages until PUBACKs arrive, in order")
    func inflightWindowThroughHandler() throws {
        let broker = EmbeddedBroker { $0.maxInflightMessages = 2 }
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "s"))
        _ = try subscribe(subscriber, "t", qos: .atLeastOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))
        for n in 1...4 {
            try publisher.send(.publish(PublishPacket(topic: "t", payload: payload("\(n)"), qos: .atLeastOnce, packetID: UInt16(n))))
        }
        let window = try subscriber.receivedPublishes()
        #expect(window.map { String(buffer: $0.payload) } == ["1", "2"])
        try subscriber.send(.puback(PubAckPacket(packetID: try #require(window.first?.packetID))))
        #expect(try subscriber.receivedPublishes().map { String(buffer: $0.payload) } == ["3"])
    }

    @Test("a persistent session keeps subscriptions and QoS 1 messages while offline; resume re-sends with DUP")
    func persistentSessionResume() throws {
        let broker = EmbeddedBroker()
        let persistent = ConnectPacket(cleanSession: false, clientIdentifier: "offline")
        let (subscriber, _) = try broker.connect(persistent)
        _ = try subscribe(subscriber, "news/#", qos: .atLeastOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))

        try publisher.send(.publish(PublishPacket(topic: "news/1", payload: payload("unacked"), qos: .atLeastOnce, packetID: 1)))
        let unacked = try #require(try subscriber.receivedPublishes().first)
        subscriber.dropConnection()

        try publisher.send(.publish(PublishPacket(topic: "news/2", payload: payload("queued"), qos: .atLeastOnce, packetID: 2)))
        try publisher.send(.publish(PublishPacket(topic: "news/3", payload: payload("qos0 dropped"), qos: .atMostOnce)))

        let (resumed, connack) = try broker.connect(persistent)
        #expect(connack?.sessionPresent == true)
        let afterResume = try resumed.received()
        #expect(afterResume.count == 2)
        guard case .publish(let resent) = afterResume.first, case .publish(let queued) = afterResume.last else {
            Issue.record("expected two PUBLISHes, got \(afterResume)")
            return
        }
        #expect(resent.dup && resent.packetID == unacked.packetID && String(buffer: resent.payload) == "unacked")
        #expect(!queued.dup && String(buffer: queued.payload) == "queued")
    }

    @Test("a routed message that is kept (queued for an offline session, retained) does not pin the read buffer")
    func keptMessagesDoNotPinTheReadBuffer() throws {
        let broker = EmbeddedBroker()
        let (subscriber, _) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: "offline"))
        _ = try subscribe(subscriber, "kept", qos: .atLeastOnce)
        subscriber.dropConnection()
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))

        // The PUBLISH arrives in a 64 KiB read buffer; its decoded payload is a 16-byte slice of it.
        var readBuffer = ByteBufferAllocator().buffer(capacity: 65536)
        let publish = PublishPacket(
            topic: "kept", payload: payload("sixteen bytes!!!"), qos: .atLeastOnce, retain: true, packetID: 3)
        try MQTTPacketEncoder.encode(.publish(publish), into: &readBuffer)
        try publisher.channel.writeInbound(readBuffer)

        let limit = 16 + BrokerMessage.compactionSlack
        let queued = try #require(broker.core.session(forClientID: "offline")?.outbound.queue.first)
        #expect(String(buffer: queued.message.payload) == "sixteen bytes!!!")
        #expect(queued.message.payload.storageCapacity <= limit)
        let retained = try #require(broker.core.retainedStore.message(forTopic: "kept"))
        #expect(retained.payload.storageCapacity <= limit)
    }

    @Test("PUBREL is re-sent on resume for a message already in PUBREC-received state")
    func resumeResendsPubRel() throws {
        let broker = EmbeddedBroker()
        let persistent = ConnectPacket(cleanSession: false, clientIdentifier: "q2")
        let (subscriber, _) = try broker.connect(persistent)
        _ = try subscribe(subscriber, "t", qos: .exactlyOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))
        try publisher.send(.publish(PublishPacket(topic: "t", payload: payload("x"), qos: .exactlyOnce, packetID: 1)))
        let id = try #require(try subscriber.receivedPublishes().first?.packetID)
        try subscriber.send(.pubrec(PubRecPacket(packetID: id)))
        #expect(try subscriber.received() == [.pubrel(PubRelPacket(packetID: id))])
        subscriber.dropConnection()

        let (resumed, _) = try broker.connect(persistent)
        #expect(try resumed.received() == [.pubrel(PubRelPacket(packetID: id))])
    }

    @Test("clean session state is discarded on disconnect; session present is 0 afterwards")
    func cleanSessionDiscarded() throws {
        let broker = EmbeddedBroker()
        let (client, _) = try broker.connect(ConnectPacket(cleanSession: true, clientIdentifier: "c"))
        _ = try subscribe(client, "t", qos: .atLeastOnce)
        client.dropConnection()
        #expect(broker.core.session(forClientID: "c") == nil)
        #expect(broker.core.subscriptionCount == 0)

        let (again, connack) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: "c"))
        #expect(connack?.sessionPresent == false)
        again.dropConnection()
        let (cleanAgain, cleanConnack) = try broker.connect(ConnectPacket(cleanSession: true, clientIdentifier: "c"))
        #expect(cleanConnack?.sessionPresent == false)
        _ = cleanAgain
    }

    @Test("retained: new subscriptions get retain=1 at min QoS, existing ones retain=0; empty payload deletes")
    func retainedMessages() throws {
        let broker = EmbeddedBroker()
        let (existing, _) = try broker.connect(ConnectPacket(clientIdentifier: "existing"))
        _ = try subscribe(existing, "r/#", qos: .exactlyOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))
        try publisher.send(.publish(PublishPacket(topic: "r/1", payload: payload("v1"), qos: .atLeastOnce, retain: true, packetID: 1)))
        try publisher.send(.publish(PublishPacket(topic: "r/1", payload: payload("v2"), qos: .exactlyOnce, retain: true, packetID: 2)))
        #expect(try existing.receivedPublishes().map(\.retain) == [false, false])

        let (newcomer, _) = try broker.connect(ConnectPacket(clientIdentifier: "new"))
        let answer = try subscribe(newcomer, "r/+", qos: .atLeastOnce)
        #expect(answer.first == .suback(SubAckPacket(packetID: 1, returnCodes: [.granted(.atLeastOnce)])))
        guard answer.count == 2, case .publish(let retained) = answer[1] else {
            Issue.record("expected SUBACK then the retained message, got \(answer)")
            return
        }
        #expect(retained.retain && retained.qos == .atLeastOnce && String(buffer: retained.payload) == "v2")

        // Re-subscribing re-sends the retained message.
        let again = try subscribe(newcomer, "r/+", qos: .atMostOnce, id: 2)
        #expect(again.count == 2)

        // An empty retained message deletes and is still forwarded, as a normal message.
        try publisher.send(.publish(PublishPacket(topic: "r/1", payload: ByteBuffer(), qos: .atMostOnce, retain: true)))
        let deletion = try existing.receivedPublishes()
        #expect(deletion.count == 1 && deletion.first?.retain == false && deletion.first?.payload.readableBytes == 0)
        let (late, _) = try broker.connect(ConnectPacket(clientIdentifier: "late"))
        #expect(try subscribe(late, "r/#", qos: .atLeastOnce).count == 1)
    }

    @Test("overlapping subscriptions deliver one copy at the highest granted QoS; SUBACK caps at maxQoS")
    func overlappingSubscriptions() throws {
        let broker = EmbeddedBroker { $0.maxQoS = .atLeastOnce }
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "o"))
        try client.send(
            .subscribe(
                SubscribePacket(packetID: 3, subscriptions: [.init(topicFilter: "a/#", qos: .atMostOnce), .init(topicFilter: "a/+", qos: .exactlyOnce)])
            )
        )
        #expect(try client.received() == [.suback(SubAckPacket(packetID: 3, returnCodes: [.granted(.atMostOnce), .granted(.atLeastOnce)]))])
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "p"))
        try publisher.send(.publish(PublishPacket(topic: "a/b", payload: payload("x"), qos: .atLeastOnce, packetID: 1)))
        let copies = try client.receivedPublishes()
        #expect(copies.count == 1)
        #expect(copies.first?.qos == .atLeastOnce)
    }

    @Test("UNSUBACK is sent even when nothing matched, and unsubscribed filters stop delivering")
    func unsubscribe() throws {
        let broker = EmbeddedBroker()
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "u"))
        _ = try subscribe(client, "t", qos: .atMostOnce)
        try client.send(.unsubscribe(UnsubscribePacket(packetID: 4, topicFilters: ["t", "nothing/here"])))
        #expect(try client.received() == [.unsuback(UnsubAckPacket(packetID: 4))])
        try client.send(.publish(PublishPacket(topic: "t", payload: payload("x"))))
        #expect(try client.receivedPublishes().isEmpty)
    }

    @Test("a malformed packet closes only its connection and publishes its will")
    func malformedPacketIsolation() throws {
        let broker = EmbeddedBroker()
        let (bystander, _) = try broker.connect(ConnectPacket(clientIdentifier: "b"))
        _ = try subscribe(bystander, "#", qos: .atMostOnce)
        let (bad, _) = try broker.connect(ConnectPacket(clientIdentifier: "bad", will: .init(topic: "wills/bad", payload: payload("bye"))))
        // PUBLISH with QoS 3 (both QoS bits set): malformed (MQTT-3.3.1-4).
        try bad.sendRaw([0x36, 0x05, 0x00, 0x01, 0x74, 0x00, 0x01])
        #expect(!bad.isActive)
        #expect(bystander.isActive)
        #expect(try bystander.receivedPublishes().map(\.topic) == ["wills/bad"])
        try bystander.send(.publish(PublishPacket(topic: "still/works", payload: payload("y"))))
        #expect(try bystander.receivedPublishes().map(\.topic) == ["still/works"])
    }

    @Test("a packet above maxPacketSize closes the connection")
    func oversizedPacket() throws {
        let broker = EmbeddedBroker { $0.maxPacketSize = 64 }
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "big"))
        try client.send(.publish(PublishPacket(topic: "t", payload: ByteBuffer(repeating: 1, count: 100))))
        #expect(!client.isActive)
    }

    @Test("an unsupported protocol level is answered with CONNACK 0x01 and closed")
    func unsupportedProtocolLevel() throws {
        let broker = EmbeddedBroker()
        let client = try broker.accept()
        var connect = ByteBuffer()
        try MQTTPacketEncoder.encode(.connect(ConnectPacket(clientIdentifier: "v6")), into: &connect)
        // Fixed header (2 bytes) + name length (2) + "MQTT" (4): the level byte.
        connect.setInteger(UInt8(6), at: 8)
        try client.sendRaw(Array(connect.readableBytesView))
        #expect(try client.received() == [.connack(ConnAckPacket(sessionPresent: false, returnCode: .unacceptableProtocolVersion))])
        #expect(!client.isActive)
    }

    @Test("empty client identifier: assigned with clean session, refused with 0x02 without")
    func emptyClientIdentifier() throws {
        let broker = EmbeddedBroker()
        let (accepted, connack) = try broker.connect(ConnectPacket(cleanSession: true, clientIdentifier: ""))
        #expect(connack?.returnCode == .accepted)
        #expect(accepted.isActive)
        #expect(broker.core.sessionCount == 1)

        let (refused, refusal) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: ""))
        #expect(refusal?.returnCode == .identifierRejected)
        #expect(!refused.isActive)
    }

    @Test("the first packet must be CONNECT; a second CONNECT closes the connection")
    func connectOrder() throws {
        let broker = EmbeddedBroker()
        let early = try broker.accept()
        try early.send(.pingreq(PingReqPacket()))
        #expect(try early.received().isEmpty)
        #expect(!early.isActive)

        let (twice, _) = try broker.connect(ConnectPacket(clientIdentifier: "twice"))
        try twice.send(.connect(ConnectPacket(clientIdentifier: "twice")))
        #expect(!twice.isActive)
    }

    @Test("a socket that sends no CONNECT is closed after the connect timeout")
    func connectTimeout() throws {
        let broker = EmbeddedBroker { $0.connectTimeout = .seconds(3) }
        let idle = try broker.accept()
        broker.advance(by: .milliseconds(2999))
        #expect(idle.isActive)
        broker.advance(by: .milliseconds(1))
        #expect(!idle.isActive)
    }

    @Test("anonymous clients are refused with 0x05 when allowAnonymous is false; the authenticator decides others")
    func authentication() throws {
        struct OnlyAlice: MQTTBrokerAuthenticator {
            func authenticate(username: String, password: [UInt8]?, clientIdentifier: String) -> Bool {
                username == "alice" && password == Array("secret".utf8)
            }
        }
        let broker = EmbeddedBroker {
            $0.allowAnonymous = false
            $0.authenticator = OnlyAlice()
        }
        #expect(try broker.connect(ConnectPacket(clientIdentifier: "anon")).1?.returnCode == .notAuthorized)
        let wrong = ConnectPacket(clientIdentifier: "mallory", username: "alice", password: Array("guess".utf8))
        #expect(try broker.connect(wrong).1?.returnCode == .badUsernameOrPassword)
        let right = ConnectPacket(clientIdentifier: "alice", username: "alice", password: Array("secret".utf8))
        #expect(try broker.connect(right).1?.returnCode == .accepted)
    }

    @Test("$SYS statistics are published as retained messages with mosquitto's topic names")
    func sysTopics() throws {
        let broker = EmbeddedBroker()
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "stats"))
        _ = try subscribe(client, "plain", qos: .atMostOnce)
        broker.advance(by: .seconds(42))
        broker.core.publishSysTopics()
        let (observer, _) = try broker.connect(ConnectPacket(clientIdentifier: "observer"))
        let retained = try subscribe(observer, "$SYS/broker/#", qos: .atMostOnce).compactMap { packet -> (String, String)? in
            if case .publish(let publish) = packet, publish.retain { return (publish.topic, String(buffer: publish.payload)) }
            return nil
        }
        let values = Dictionary(retained, uniquingKeysWith: { first, _ in first })
        #expect(values["$SYS/broker/version"] == BrokerCore.version)
        #expect(values["$SYS/broker/uptime"] == "42 seconds")
        #expect(values["$SYS/broker/clients/connected"] == "1")
        #expect(values["$SYS/broker/subscriptions/count"] == "1")
        #expect(values["$SYS/broker/messages/received"] == "2")
        for key in ["clients/total", "messages/sent", "bytes/received", "bytes/sent", "retained messages/count"] {
            #expect(values["$SYS/broker/\(key)"] != nil, "missing \(key)")
        }
        // A wildcard-first filter must not see $SYS.
        let (other, _) = try broker.connect(ConnectPacket(clientIdentifier: "other"))
        #expect(try subscribe(other, "#", qos: .atMostOnce).count == 1)
    }

    @Test("a delivery a read batch writes leaves when the batch is complete, without waiting for the end of the loop tick")
    func flushPerReadBatch() throws {
        let (_, subscriber, publisher) = try roomSubscriberAndPublisher(qos: .atLeastOnce)
        // One read batch (channelRead + channelReadComplete) and no loop tick: the loop's tasks do not run.
        try publisher.channel.writeInbound(
            ByteBuffer(bytes: try encoded(.publish(PublishPacket(topic: "room/a", payload: payload("now"), qos: .atLeastOnce, packetID: 3)))))
        let delivered = try #require(try subscriber.channel.readOutbound(as: ByteBuffer.self))
        var decoder = MQTTPacketDecoder()
        var bytes = delivered
        guard case .publish(let publish) = try decoder.decode(from: &bytes) else {
            Issue.record("expected a PUBLISH")
            return
        }
        #expect(publish.topic == "room/a")
        // The publisher's bare PUBACK waits for the end of the tick (FlushOrderTests).
        #expect(try publisher.channel.readOutbound(as: ByteBuffer.self) == nil)
        publisher.channel.embeddedEventLoop.run()
        let acknowledgement = try #require(try publisher.channel.readOutbound(as: ByteBuffer.self))
        #expect(acknowledgement.readableBytes == 4)  // PUBACK
    }

    @Test("inside a read batch no end-of-tick task is scheduled; a socket that closes mid-batch still flushes")
    func readBatchFlushNeedsNoTask() throws {
        let (broker, subscriber, publisher) = try roomSubscriberAndPublisher(qos: .atMostOnce)
        // channelRead without channelReadComplete: the batch is still open.
        let publish = try encoded(.publish(PublishPacket(topic: "room/a", payload: payload("mid"), qos: .atMostOnce)))
        publisher.channel.pipeline.fireChannelRead(ByteBuffer(bytes: publish))
        broker.loop.run()  // a scheduled end-of-tick flush would run here
        #expect(try subscriber.channel.readOutbound(as: ByteBuffer.self) == nil)
        #expect(broker.core.isInPipelineRead)
        // The batch never completes: the publisher's socket fails and closes. Its failure flushes.
        struct ConnectionReset: Error {}
        publisher.channel.pipeline.fireErrorCaught(ConnectionReset())
        #expect(!broker.core.isInPipelineRead)
        #expect(try subscriber.receivedPublishes().map(\.topic) == ["room/a"])
    }

    /// A broker with a client "sub" subscribed to `room/#` at `qos` and a connected client "pub".
    private func roomSubscriberAndPublisher(qos: QoS) throws -> (EmbeddedBroker, EmbeddedClient, EmbeddedClient) {
        let broker = EmbeddedBroker()
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "sub"))
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        #expect(try subscribe(subscriber, "room/#", qos: qos).count == 1)
        return (broker, subscriber, publisher)
    }

    private func encoded(_ packet: MQTTPacket) throws -> [UInt8] {
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(packet, into: &buffer)
        return Array(buffer.readableBytesView)
    }
}
