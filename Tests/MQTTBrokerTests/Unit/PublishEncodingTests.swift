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
}
