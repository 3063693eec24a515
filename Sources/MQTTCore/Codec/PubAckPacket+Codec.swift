import NIOCore

extension PubAckPacket: MQTTIdentifierOnlyPacket {
    /// Decodes a PUBACK body (MQTT 3.1.1 section 3.4): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PubAckPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return PubAckPacket(packetID: packetID)
    }

    var packetType: PacketType { .puback }
}
