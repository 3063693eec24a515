import NIOCore

extension PublishPacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 PUBLISH body (MQTT 5.0 section 3.3): topic name, packet identifier if QoS > 0, properties,
    /// payload. Kept apart from the 3.1.1 ``decode(from:flags:previousTopic:)`` so that the 3.1.1 path carries no
    /// MQTT 5 branch.
    ///
    /// The topic name may be empty when a Topic Alias stands for it (MQTT 5.0 3.3.2.1); resolving the alias is the
    /// receiver's job, which holds the alias table. A topic with the bytes of `previousTopic` (one this decoder
    /// already validated) reuses that string, as the 3.1.1 decoder does.
    static func decodeV5(
        from body: inout ByteBuffer, flags: UInt8, previousTopic: String? = nil
    ) throws(MQTTCodecError) -> PublishPacket {
        guard let qos = QoS(rawValue: (flags >> 1) & 0b11) else { throw .invalidPublishQoS }
        let topic: String
        var packetID: UInt16?
        if let previousTopic, !previousTopic.isEmpty,
            let repeated = Self.repeatedTopicPacketID(in: body, qos: qos, previousTopic: previousTopic)
        {
            topic = previousTopic
            packetID = repeated.packetID
            body.moveReaderIndex(forwardBy: repeated.headerLength)
        } else {
            topic = try body.readMQTTString()
            if !topic.isEmpty { try MQTTTopic.validateName(topic) }
            if qos != .atMostOnce { packetID = try body.readMQTTPacketID() }
        }
        let properties = try MQTTProperties.decode(from: &body, context: .publish)
        if topic.isEmpty, properties.topicAlias == nil { throw .emptyTopicNameWithoutTopicAlias }
        let payload = body.readSlice(length: body.readableBytes) ?? ByteBuffer()
        return PublishPacket(
            topic: topic,
            payload: payload,
            qos: qos,
            retain: flags & 0b0001 != 0,
            dup: flags & 0b1000 != 0,
            packetID: packetID,
            properties: properties
        )
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        var length = try remainingLength()
        length += MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .publish))
        return length
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeMQTTString(topic)
        if qos != .atMostOnce, let packetID { buffer.writeInteger(packetID) }
        properties.encode(into: &buffer)
        buffer.writeImmutableBuffer(payload)
    }
}

extension PublishPacket {
    /// The bytes this PUBLISH takes on the wire at `protocolVersion`, fixed header included: what a peer's MQTT 5
    /// Maximum Packet Size bounds (MQTT 5.0 3.1.2.11.4).
    /// - Throws: what encoding it would throw (a property the packet may not carry, a field too long).
    public func wireSize(protocolVersion: MQTTProtocolVersion) throws(MQTTCodecError) -> Int {
        let remaining = protocolVersion == .v5 ? try remainingLengthV5() : try remainingLength()
        return 1 + MQTTWireSize.variableByteInteger(remaining) + remaining
    }
}
