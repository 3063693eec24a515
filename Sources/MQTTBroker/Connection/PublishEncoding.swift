import MQTTCore
import NIOCore

/// The broker's fast path for writing PUBLISH packets (MQTT 3.1 and 3.1.1 share the layout).
///
/// A PUBLISH fanned out to many subscribers differs per copy only in the flags and the packet identifier, so the
/// broker writes a small header buffer per copy and shares the payload: small payloads are copied right behind the
/// header (one write), large ones go out as a second buffer that is the same storage for every subscriber.
enum PublishEncoding {
    /// Payloads up to this size are copied into the header buffer; larger ones are written as a shared slice.
    static let inlinePayloadLimit = 512

    /// The buffers making up one PUBLISH: the header (with the payload inlined when small) and, for large
    /// payloads, the payload itself.
    struct Encoded {
        var head: ByteBuffer
        var payload: ByteBuffer?

        /// Total bytes on the wire.
        var byteCount: Int { head.readableBytes + (payload?.readableBytes ?? 0) }
    }

    /// Encodes `delivery` for a 3.1/3.1.1 client into buffers of its own (to share between subscribers).
    static func encode(_ delivery: OutboundDelivery, allocator: ByteBufferAllocator) -> Encoded {
        let topicLength = delivery.message.topic.utf8.count
        let payloadLength = delivery.message.payload.readableBytes
        let inline = payloadLength <= inlinePayloadLimit
        var head = allocator.buffer(capacity: 5 + 2 + topicLength + 2 + (inline ? payloadLength : 0))
        writeHeader(of: delivery, into: &head)
        if inline {
            head.writeImmutableBuffer(delivery.message.payload)
            return Encoded(head: head, payload: nil)
        }
        return Encoded(head: head, payload: delivery.message.payload)
    }

    /// Appends everything of `delivery`'s PUBLISH but the payload to `buffer`: fixed header, topic and packet
    /// identifier. The payload's bytes must follow.
    static func writeHeader(of delivery: OutboundDelivery, into buffer: inout ByteBuffer) {
        let topicLength = delivery.message.topic.utf8.count
        let idLength = delivery.packetID == nil ? 0 : 2
        let remainingLength = 2 + topicLength + idLength + delivery.message.payload.readableBytes

        var flags: UInt8 = PacketType.publish.rawValue << 4
        flags |= delivery.qos.rawValue << 1
        if delivery.dup { flags |= 0x08 }
        if delivery.retain { flags |= 0x01 }

        buffer.writeMQTTFixedHeader(firstByte: flags, remainingLength: remainingLength)
        buffer.writeInteger(UInt16(truncatingIfNeeded: topicLength))
        buffer.writeString(delivery.message.topic)
        if let packetID = delivery.packetID {
            buffer.writeInteger(packetID)
        }
    }
}
