import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("PublishEncoding")
struct PublishEncodingTests {
    @Test(
        "the fast path writes exactly what the codec's encoder writes",
        arguments: [0, 5, PublishEncoding.inlinePayloadLimit, PublishEncoding.inlinePayloadLimit + 1, 20_000]
    )
    func matchesCodec(payloadSize: Int) throws {
        let payload = ByteBuffer(repeating: 0x5A, count: payloadSize)
        for (qos, packetID) in [(QoS.atMostOnce, UInt16?.none), (.atLeastOnce, 513), (.exactlyOnce, 65535)] {
            for (retain, dup) in [(false, false), (true, false), (false, true)] where !(dup && qos == .atMostOnce) {
                let delivery = OutboundDelivery(
                    message: BrokerMessage(topic: "chat/room/ü", payload: payload, qos: qos, retain: retain),
                    qos: qos, retain: retain, dup: dup, packetID: packetID
                )
                let encoded = PublishEncoding.encode(delivery, allocator: ByteBufferAllocator())
                var fast = encoded.head
                if var rest = encoded.payload { fast.writeBuffer(&rest) }
                var reference = ByteBuffer()
                try MQTTPacketEncoder.encode(.publish(delivery.packet), into: &reference)
                #expect(fast == reference, "qos \(qos) retain \(retain) dup \(dup) size \(payloadSize)")
                #expect(encoded.byteCount == reference.readableBytes)
                #expect((encoded.payload != nil) == (payloadSize > PublishEncoding.inlinePayloadLimit))
            }
        }
    }

    /// Deliveries of every shape: QoS 0 (no identifier), 1 and 2, flags, a topic whose length needs the second
    /// remaining-length byte, and payloads on both sides of the inline limit.
    static func assortedDeliveries() -> [OutboundDelivery] {
        let longTopic = "room/" + String(repeating: "t", count: 200)
        return [
            (QoS.atMostOnce, UInt16?.none, "a", 0, false, false),
            (.atLeastOnce, 1, "chat/room/ü", 16, true, false),
            (.exactlyOnce, 65535, longTopic, 100, false, true),
            (.atLeastOnce, 258, "x/y", PublishEncoding.inlinePayloadLimit, false, false),
            (.exactlyOnce, 7, longTopic, PublishEncoding.inlinePayloadLimit + 1, false, false),
        ].map { qos, packetID, topic, size, retain, dup in
            OutboundDelivery(
                message: BrokerMessage(topic: topic, payload: ByteBuffer(repeating: 0xA5, count: size), qos: qos, retain: retain),
                qos: qos, retain: retain, dup: dup, packetID: packetID)
        }
    }

    @Test("packets written one after another behind existing bytes match the codec's, with or without the payload")
    func writesBehindExistingBytes() throws {
        for includingPayload in [true, false] {
            var fast = ByteBuffer(bytes: [0x01, 0x02, 0x03])
            var reference = fast
            for delivery in Self.assortedDeliveries() {
                PublishEncoding.write(delivery, includingPayload: includingPayload, into: &fast)
                var packet = ByteBuffer()
                try MQTTPacketEncoder.encode(.publish(delivery.packet), into: &packet)
                if !includingPayload {
                    packet.moveWriterIndex(to: packet.writerIndex - delivery.message.payload.readableBytes)
                }
                reference.writeBuffer(&packet)
            }
            #expect(fast == reference, "includingPayload \(includingPayload)")
        }
    }

    @Test("the field-by-field fallback (a topic without contiguous UTF-8) writes the same bytes")
    func fallbackMatchesFastPath() {
        for includingPayload in [true, false] {
            var fast = ByteBuffer()
            var fallback = ByteBuffer()
            for delivery in Self.assortedDeliveries() {
                PublishEncoding.write(delivery, includingPayload: includingPayload, into: &fast)
                PublishEncoding.writeFieldByField(delivery, includingPayload: includingPayload, into: &fallback)
            }
            #expect(fast == fallback, "includingPayload \(includingPayload)")
        }
    }
}
