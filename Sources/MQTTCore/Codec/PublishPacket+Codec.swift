import NIOCore

/// PUBLISH fixed header flag bits (MQTT 3.1.1 section 3.3.1).
private enum PublishFlags {
    static let retain: UInt8 = 0b0001
    static let qosShift: UInt8 = 1
    static let qosMask: UInt8 = 0b0110
    static let dup: UInt8 = 0b1000
}

extension PublishPacket: MQTTPacketBodyEncodable {
    /// Decodes a PUBLISH body (MQTT 3.1.1 section 3.3). The payload is a slice of `body` (no copy).
    /// - Parameters:
    ///   - flags: the fixed header's low nibble, already validated (QoS not 3, no DUP on QoS 0).
    ///   - previousTopic: a topic name this decoder already validated. When the packet's topic has the same bytes,
    ///     that string is reused: no allocation and no second validation (a publisher usually repeats its topic).
    static func decode(
        from body: inout ByteBuffer, flags: UInt8, previousTopic: String? = nil
    ) throws(MQTTCodecError) -> PublishPacket {
        guard let qos = QoS(rawValue: (flags & PublishFlags.qosMask) >> PublishFlags.qosShift) else {
            throw .invalidPublishQoS
        }
        let topic: String
        var packetID: UInt16?
        if let previousTopic, let repeated = Self.repeatedTopicPacketID(in: body, qos: qos, previousTopic: previousTopic) {
            // The publisher's topic again: its bytes were compared, not sliced, decoded and validated.
            topic = previousTopic
            packetID = repeated.packetID
            body.moveReaderIndex(forwardBy: repeated.headerLength)
        } else {
            let topicBytes = try body.readMQTTBinarySlice()
            topic = try topicBytes.mqttValidatedString()
            try MQTTTopic.validateName(topic)
            if qos != .atMostOnce { packetID = try body.readMQTTPacketID() }
        }
        let payload = body.readSlice(length: body.readableBytes) ?? ByteBuffer()
        return PublishPacket(
            topic: topic,
            payload: payload,
            qos: qos,
            retain: flags & PublishFlags.retain != 0,
            dup: flags & PublishFlags.dup != 0,
            packetID: packetID
        )
    }

    /// When the variable header names `previousTopic` and is complete (and its packet identifier, if any, is not
    /// 0), its packet identifier and length; nil otherwise, and the caller decodes field by field, which throws
    /// the right error for a short or invalid header. One read of the buffer's bytes: each `getInteger`,
    /// `getSlice` or comparison on a `ByteBuffer` is a checked access to its storage, and this runs for every
    /// PUBLISH of a publisher that repeats its topic.
    static func repeatedTopicPacketID(
        in body: ByteBuffer, qos: QoS, previousTopic: String
    ) -> (packetID: UInt16?, headerLength: Int)? {
        let idLength = qos == .atMostOnce ? 0 : 2
        let found: (packetID: UInt16?, headerLength: Int)?? = previousTopic.utf8.withContiguousStorageIfAvailable {
            previous in
            body.withUnsafeReadableBytes { bytes -> (packetID: UInt16?, headerLength: Int)? in
                guard bytes.count >= 2 else { return nil }
                let topicLength = Int(bytes[0]) << 8 | Int(bytes[1])
                guard topicLength == previous.count, bytes.count >= 2 + topicLength + idLength,
                    sameBytes(UnsafeRawBufferPointer(rebasing: bytes[2..<2 + topicLength]), UnsafeRawBufferPointer(previous))
                else { return nil }
                guard idLength > 0 else { return (nil, 2 + topicLength) }
                let packetID = UInt16(bytes[2 + topicLength]) << 8 | UInt16(bytes[3 + topicLength])
                guard packetID != 0 else { return nil }
                return (packetID, 2 + topicLength + 2)
            }
        }
        return found ?? nil
    }

    var packetType: PacketType { .publish }

    var fixedHeaderFlags: UInt8 {
        var flags = qos.rawValue << PublishFlags.qosShift
        if retain { flags |= PublishFlags.retain }
        if dup, qos != .atMostOnce { flags |= PublishFlags.dup }
        return flags
    }

    func remainingLength() throws(MQTTCodecError) -> Int {
        var length = try MQTTWireSize.string(topic) + payload.readableBytes
        if qos != .atMostOnce {
            guard let packetID else { throw .missingPacketIdentifier }
            _ = try validatedForEncoding(packetID: packetID)
            length += 2
        }
        return length
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeMQTTString(topic)
        if qos != .atMostOnce, let packetID { buffer.writeInteger(packetID) }
        buffer.writeImmutableBuffer(payload)
    }
}
