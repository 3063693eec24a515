import NIOCore

extension PubRelPacket: MQTTIdentifierOnlyPacket {
    /// Decodes a PUBREL body (MQTT 3.1.1 section 3.6): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PubRelPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return PubRelPacket(packetID: packetID)
    }

    var packetType: PacketType { .pubrel }
}
