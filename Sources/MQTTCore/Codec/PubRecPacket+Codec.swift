import NIOCore

extension PubRecPacket: MQTTIdentifierOnlyPacket {
    /// Decodes a PUBREC body (MQTT 3.1.1 section 3.5): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PubRecPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return PubRecPacket(packetID: packetID)
    }

    var packetType: PacketType { .pubrec }
}
