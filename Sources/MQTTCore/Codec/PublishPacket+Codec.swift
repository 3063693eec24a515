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
        let topicBytes = try body.readMQTTBinarySlice()
        let topic: String
        if let previousTopic, topicBytes.mqttBytesEqual(previousTopic) {
            topic = previousTopic
        } else {
            topic = try topicBytes.mqttValidatedString()
            try MQTTTopic.validateName(topic)
        }
        var packetID: UInt16?
        if qos != .atMostOnce { packetID = try body.readMQTTPacketID() }
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
