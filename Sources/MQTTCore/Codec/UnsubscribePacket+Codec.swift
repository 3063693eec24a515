import NIOCore

extension UnsubscribePacket: MQTTPacketBodyEncodable {
    /// Decodes an UNSUBSCRIBE body (MQTT 3.1.1 section 3.10): packet identifier, then one or more topic filters.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> UnsubscribePacket {
        let packetID = try body.readMQTTPacketID()
        var topicFilters: [String] = []
        while body.readableBytes > 0 {
            let filter = try body.readMQTTString()
            try MQTTTopic.validateFilter(filter)
            topicFilters.append(filter)
        }
        guard !topicFilters.isEmpty else { throw .unsubscribeWithoutFilters }
        return UnsubscribePacket(packetID: packetID, topicFilters: topicFilters)
    }

    var packetType: PacketType { .unsubscribe }

    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !topicFilters.isEmpty else { throw .unsubscribeWithoutFilters }
        var length = 2
        for filter in topicFilters {
            length += try MQTTWireSize.string(filter)
        }
        return length
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        for filter in topicFilters {
            buffer.writeMQTTString(filter)
        }
    }
}
