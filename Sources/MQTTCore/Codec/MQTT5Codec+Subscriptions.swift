import NIOCore

/// MQTT 5 subscription options bits (MQTT 5.0 section 3.8.3.1).
private enum SubscriptionOptions {
    static let qosMask: UInt8 = 0b0000_0011
    static let noLocal: UInt8 = 0b0000_0100
    static let retainAsPublished: UInt8 = 0b0000_1000
    static let retainHandlingShift: UInt8 = 4
    static let retainHandlingMask: UInt8 = 0b0011_0000
    static let reserved: UInt8 = 0b1100_0000
}

// MARK: SUBSCRIBE

extension SubscribePacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 SUBSCRIBE body (MQTT 5.0 section 3.8): packet identifier, properties, then one or more
    /// pairs of topic filter and subscription options byte.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> SubscribePacket {
        let packetID = try body.readMQTTPacketID()
        let properties = try MQTTProperties.decode(from: &body, context: .subscribe)
        var subscriptions: [Subscription] = []
        while body.readableBytes > 0 {
            let filter = try body.readMQTTString()
            try MQTTTopic.validateFilter(filter)
            subscriptions.append(try decodeOptions(body.readMQTTByte(), filter: filter))
        }
        guard !subscriptions.isEmpty else { throw .subscribeWithoutFilters }
        return SubscribePacket(packetID: packetID, subscriptions: subscriptions, properties: properties)
    }

    /// Splits a subscription options byte: reserved bits 6 and 7 set is a Malformed Packet (MQTT-3.8.3-5), QoS 3
    /// and Retain Handling 3 are Protocol Errors, and so is No Local on a shared subscription (MQTT-3.8.3-4).
    private static func decodeOptions(_ options: UInt8, filter: String) throws(MQTTCodecError) -> Subscription {
        guard options & SubscriptionOptions.reserved == 0 else { throw .subscriptionOptionsReservedBitsSet(options) }
        guard let qos = QoS(rawValue: options & SubscriptionOptions.qosMask) else {
            throw .invalidSubscriptionQoS(options & SubscriptionOptions.qosMask)
        }
        let retainHandlingBits = options & SubscriptionOptions.retainHandlingMask
        guard let retainHandling = RetainHandling(rawValue: retainHandlingBits >> SubscriptionOptions.retainHandlingShift)
        else { throw .invalidRetainHandling }
        let noLocal = options & SubscriptionOptions.noLocal != 0
        if noLocal, filter.utf8.starts(with: "$share/".utf8) { throw .noLocalOnSharedSubscription }
        return Subscription(
            topicFilter: filter, qos: qos, noLocal: noLocal,
            retainAsPublished: options & SubscriptionOptions.retainAsPublished != 0, retainHandling: retainHandling)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        let length = try remainingLength()
        return length + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .subscribe))
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        properties.encode(into: &buffer)
        for subscription in subscriptions {
            var options = subscription.qos.rawValue
            if subscription.noLocal { options |= SubscriptionOptions.noLocal }
            if subscription.retainAsPublished { options |= SubscriptionOptions.retainAsPublished }
            options |= subscription.retainHandling.rawValue << SubscriptionOptions.retainHandlingShift
            buffer.writeMQTTString(subscription.topicFilter)
            buffer.writeInteger(options)
        }
    }
}

// MARK: SUBACK

extension SubAckPacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 SUBACK body (MQTT 5.0 section 3.9): packet identifier, properties, one reason code per
    /// requested filter.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> SubAckPacket {
        let packetID = try body.readMQTTPacketID()
        let properties = try MQTTProperties.decode(from: &body, context: .suback)
        guard body.readableBytes > 0 else { throw .subAckWithoutReturnCodes }
        let reasonCodes = try readReasonCodes(from: &body, for: .suback)
        return SubAckPacket(packetID: packetID, reasonCodes: reasonCodes, properties: properties)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !reasonCodes.isEmpty else { throw .subAckWithoutReturnCodes }
        for code in reasonCodes { _ = try code.validated(for: .suback) }
        let propertyLength = try properties.encodedLength(in: .suback)
        return 2 + MQTTProperties.wireSize(propertyLength: propertyLength) + reasonCodes.count
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        properties.encode(into: &buffer)
        for code in reasonCodes { buffer.writeInteger(code.rawValue) }
    }
}

// MARK: UNSUBSCRIBE

extension UnsubscribePacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 UNSUBSCRIBE body (MQTT 5.0 section 3.10): packet identifier, properties, topic filters.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> UnsubscribePacket {
        let packetID = try body.readMQTTPacketID()
        let properties = try MQTTProperties.decode(from: &body, context: .unsubscribe)
        var topicFilters: [String] = []
        while body.readableBytes > 0 {
            let filter = try body.readMQTTString()
            try MQTTTopic.validateFilter(filter)
            topicFilters.append(filter)
        }
        guard !topicFilters.isEmpty else { throw .unsubscribeWithoutFilters }
        return UnsubscribePacket(packetID: packetID, topicFilters: topicFilters, properties: properties)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        let length = try remainingLength()
        return length + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .unsubscribe))
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        properties.encode(into: &buffer)
        for filter in topicFilters { buffer.writeMQTTString(filter) }
    }
}

// MARK: UNSUBACK

extension UnsubAckPacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 UNSUBACK body (MQTT 5.0 section 3.11): packet identifier, properties, one reason code per
    /// topic filter of the UNSUBSCRIBE.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> UnsubAckPacket {
        let packetID = try body.readMQTTPacketID()
        let properties = try MQTTProperties.decode(from: &body, context: .unsuback)
        guard body.readableBytes > 0 else { throw .unsubAckWithoutReasonCodes }
        let reasonCodes = try readReasonCodes(from: &body, for: .unsuback)
        return UnsubAckPacket(packetID: packetID, reasonCodes: reasonCodes, properties: properties)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !reasonCodes.isEmpty else { throw .unsubAckWithoutReasonCodes }
        for code in reasonCodes { _ = try code.validated(for: .unsuback) }
        let propertyLength = try properties.encodedLength(in: .unsuback)
        return 2 + MQTTProperties.wireSize(propertyLength: propertyLength) + reasonCodes.count
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        properties.encode(into: &buffer)
        for code in reasonCodes { buffer.writeInteger(code.rawValue) }
    }
}

/// Reads the rest of `body` as reason codes, each one checked against `type`.
private func readReasonCodes(from body: inout ByteBuffer, for type: PacketType) throws(MQTTCodecError)
    -> [MQTTReasonCode]
{
    var codes: [MQTTReasonCode] = []
    codes.reserveCapacity(body.readableBytes)
    while body.readableBytes > 0 {
        codes.append(try MQTTReasonCode.read(from: &body, for: type))
    }
    return codes
}
