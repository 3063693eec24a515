import NIOCore

extension SubscribePacket: MQTTPacketBodyEncodable {
    /// Decodes a SUBSCRIBE body (MQTT 3.1.1 section 3.8): packet identifier, then one or more pairs of topic filter
    /// and requested-QoS byte.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> SubscribePacket {
        let packetID = try body.readMQTTPacketID()
        var subscriptions: [Subscription] = []
        while body.readableBytes > 0 {
            let filter = try body.readMQTTString()
            try MQTTTopic.validateFilter(filter)
            let options = try body.readMQTTByte()
            guard options & 0xFC == 0 else { throw .subscriptionOptionsReservedBitsSet(options) }
            guard let qos = QoS(rawValue: options) else { throw .invalidSubscriptionQoS(options) }
            subscriptions.append(Subscription(topicFilter: filter, qos: qos))
        }
        guard !subscriptions.isEmpty else { throw .subscribeWithoutFilters }
        return SubscribePacket(packetID: packetID, subscriptions: subscriptions)
    }

    var packetType: PacketType { .subscribe }

    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !subscriptions.isEmpty else { throw .subscribeWithoutFilters }
        var length = 2
        for subscription in subscriptions {
            length += try MQTTWireSize.string(subscription.topicFilter) + 1
        }
        return length
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        for subscription in subscriptions {
            buffer.writeMQTTString(subscription.topicFilter)
            buffer.writeInteger(subscription.qos.rawValue)
        }
    }
}
