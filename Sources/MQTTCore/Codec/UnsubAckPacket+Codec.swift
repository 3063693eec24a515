import NIOCore

extension UnsubAckPacket: MQTTPacketBodyEncodable {
    /// Decodes an UNSUBACK body (MQTT 3.1.1 section 3.11): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> UnsubAckPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return UnsubAckPacket(packetID: packetID)
    }

    var packetType: PacketType { .unsuback }

    // MQTT 5 per-filter reason codes are not part of the 3.1.1 wire format.
    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        return 2
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
    }
}
