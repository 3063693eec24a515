import NIOCore

extension PubCompPacket: MQTTIdentifierOnlyPacket {
    /// Decodes a PUBCOMP body (MQTT 3.1.1 section 3.7): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PubCompPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return PubCompPacket(packetID: packetID)
    }

    var packetType: PacketType { .pubcomp }
}
