import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Which output leaves when a read batch ends: deliveries and protocol replies at once, a publisher's bare
/// acknowledgements at the end of the loop tick, behind the deliveries of every socket read in that tick.
@Suite("Flush order at the end of a read batch")
struct FlushOrderTests {
    private func subscribe(_ client: EmbeddedClient, _ filter: String, qos: QoS) throws {
        try client.send(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: filter, qos: qos)])))
        _ = try client.received()
    }

    private func publish(_ topic: String, qos: QoS, id: UInt16) -> MQTTPacket {
        .publish(PublishPacket(topic: topic, payload: ByteBuffer(string: "hi"), qos: qos, packetID: id))
    }

    @Test("the delivery leaves with the read batch; the publisher's PUBACK and PUBREC wait for the end of the tick")
    func acknowledgementsWaitForTheEndOfTheTick() throws {
        let broker = EmbeddedBroker()
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "sub"))
        try subscribe(subscriber, "room/1", qos: .exactlyOnce)
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))

        try publisher.send(publish("room/1", qos: .atLeastOnce, id: 7))
        try publisher.send(publish("room/1", qos: .exactlyOnce, id: 8))
        let delivered = try subscriber.flushedBeforeEndOfTick()
        #expect(delivered.map(\.type) == [.publish, .publish])
        #expect(try publisher.flushedBeforeEndOfTick().isEmpty)

        #expect(try publisher.received() == [.puback(PubAckPacket(packetID: 7)), .pubrec(PubRecPacket(packetID: 8))])

        try publisher.send(.pubrel(PubRelPacket(packetID: 8)))
        #expect(try publisher.flushedBeforeEndOfTick().isEmpty)
        #expect(try publisher.received() == [.pubcomp(PubCompPacket(packetID: 8))])
    }

    @Test("an acknowledgement written with a delivery to the same client leaves at once with it")
    func acknowledgementWithDeliveryLeavesAtOnce() throws {
        let broker = EmbeddedBroker()
        let (client, _) = try broker.connect(ConnectPacket(clientIdentifier: "echo"))
        try subscribe(client, "echo", qos: .atLeastOnce)

        try client.send(publish("echo", qos: .atLeastOnce, id: 3))
        let packets = try client.flushedBeforeEndOfTick()
        #expect(packets.map(\.type).sorted { $0.rawValue < $1.rawValue } == [.publish, .puback])
    }

    @Test("replies that move a delivery on (PUBREL, PINGRESP, SUBACK) leave with the read batch")
    func deliveryRepliesLeaveAtOnce() throws {
        let broker = EmbeddedBroker()
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "sub"))
        try subscriber.send(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "t", qos: .exactlyOnce)])))
        #expect(try subscriber.flushedBeforeEndOfTick().map(\.type) == [.suback])
        let (publisher, _) = try broker.connect(ConnectPacket(clientIdentifier: "pub"))
        try publisher.send(publish("t", qos: .exactlyOnce, id: 1))

        let deliveries = try subscriber.flushedBeforeEndOfTick()
        guard case .publish(let delivery) = deliveries.first, let packetID = delivery.packetID else {
            Issue.record("no QoS 2 delivery: \(deliveries)")
            return
        }
        try subscriber.send(.pubrec(PubRecPacket(packetID: packetID)))
        #expect(try subscriber.flushedBeforeEndOfTick() == [.pubrel(PubRelPacket(packetID: packetID))])
        try subscriber.send(.pingreq(PingReqPacket()))
        #expect(try subscriber.flushedBeforeEndOfTick() == [.pingresp(PingRespPacket())])
    }
}
