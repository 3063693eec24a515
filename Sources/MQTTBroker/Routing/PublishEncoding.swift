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

    /// Encodes `delivery` for a 3.1/3.1.1 client (or, with `version5`, for an MQTT 5 client when it carries no
    /// properties) into buffers of its own (to share between subscribers).
    static func encode(_ delivery: OutboundDelivery, allocator: ByteBufferAllocator, version5: Bool = false) -> Encoded {
        let topicLength = delivery.message.topic.utf8.count
        let payloadLength = delivery.message.payload.readableBytes
        let inline = payloadLength <= inlinePayloadLimit
        var head = allocator.buffer(capacity: 5 + 2 + topicLength + 2 + 1 + (inline ? payloadLength : 0))
        write(delivery, includingPayload: inline, version5: version5, into: &head)
        return Encoded(head: head, payload: inline ? nil : delivery.message.payload)
    }

    /// Whether `delivery` can take the fast path to an MQTT 5 client: nothing to say but an empty property list
    /// (no forwarded properties, no expiry to count down; the caller checks that the connection sets no topic
    /// aliases). Then the MQTT 5 PUBLISH is the 3.1.1 one with a property length of 0 before the payload.
    static func isPropertyFree(_ delivery: OutboundDelivery) -> Bool {
        delivery.message.properties.isEmpty && delivery.message.expiresAt == nil
    }

    /// Appends `delivery`'s PUBLISH to `buffer`: fixed header, topic and packet identifier, then the payload when
    /// `includingPayload` (otherwise the payload's bytes must follow).
    ///
    /// One access to the buffer's bytes for the whole packet: each `ByteBuffer` write checks capacity and
    /// uniqueness, and a PUBLISH written field by field took five of them.
    ///
    /// `version5` writes an MQTT 5 PUBLISH without properties: a property length of 0 after the packet identifier
    /// (``isPropertyFree(_:)``).
    static func write(
        _ delivery: OutboundDelivery, includingPayload: Bool, version5: Bool = false, into buffer: inout ByteBuffer
    ) {
        let payload = delivery.message.payload
        let propertyLength = version5 ? 1 : 0
        let written: Int? = delivery.message.topic.utf8.withContiguousStorageIfAvailable { topic in
            payload.withUnsafeReadableBytes { payloadBytes in
                let idLength = delivery.packetID == nil ? 0 : 2
                let remainingLength = 2 + topic.count + idLength + propertyLength + payloadBytes.count
                let appended = includingPayload ? payloadBytes.count : 0
                // At most 5 bytes of fixed header, then everything the remaining length counts but the payload.
                let capacity = 5 + remainingLength - payloadBytes.count + appended
                return buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: capacity) { out in
                    out[0] = firstByte(of: delivery)
                    var offset = 1 + out.storeMQTTVariableByteInteger(remainingLength, at: 1)
                    out.storeBytes(of: UInt16(truncatingIfNeeded: topic.count).bigEndian, toByteOffset: offset, as: UInt16.self)
                    offset += 2
                    UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + topic.count])
                        .copyMemory(from: UnsafeRawBufferPointer(topic))
                    offset += topic.count
                    if let packetID = delivery.packetID {
                        out.storeBytes(of: packetID.bigEndian, toByteOffset: offset, as: UInt16.self)
                        offset += 2
                    }
                    if version5 {
                        out[offset] = 0  // property length: no properties
                        offset += 1
                    }
                    if includingPayload {
                        UnsafeMutableRawBufferPointer(rebasing: out[offset..<offset + payloadBytes.count])
                            .copyMemory(from: payloadBytes)
                        offset += payloadBytes.count
                    }
                    return offset
                }
            }
        }
        if written == nil {  // a topic without contiguous UTF-8 (not a native string): field by field
            writeFieldByField(delivery, includingPayload: includingPayload, version5: version5, into: &buffer)
        }
    }

    /// The PUBLISH's first byte: type, DUP, QoS and RETAIN.
    private static func firstByte(of delivery: OutboundDelivery) -> UInt8 {
        var flags: UInt8 = PacketType.publish.rawValue << 4
        flags |= delivery.qos.rawValue << 1
        if delivery.dup { flags |= 0x08 }
        if delivery.retain { flags |= 0x01 }
        return flags
    }

    /// ``write(_:includingPayload:into:)`` through `ByteBuffer`'s own writers.
    static func writeFieldByField(
        _ delivery: OutboundDelivery, includingPayload: Bool, version5: Bool = false, into buffer: inout ByteBuffer
    ) {
        let topicLength = delivery.message.topic.utf8.count
        let idLength = delivery.packetID == nil ? 0 : 2
        let remainingLength = 2 + topicLength + idLength + (version5 ? 1 : 0) + delivery.message.payload.readableBytes
        buffer.writeMQTTFixedHeader(firstByte: firstByte(of: delivery), remainingLength: remainingLength)
        buffer.writeInteger(UInt16(truncatingIfNeeded: topicLength))
        buffer.writeString(delivery.message.topic)
        if let packetID = delivery.packetID {
            buffer.writeInteger(packetID)
        }
        if version5 {
            buffer.writeInteger(UInt8(0))
        }
        if includingPayload {
            buffer.writeImmutableBuffer(delivery.message.payload)
        }
    }
}
