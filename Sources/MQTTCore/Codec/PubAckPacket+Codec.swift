import NIOCore

extension PubAckPacket: MQTTPacketBodyEncodable {
    /// Decodes a PUBACK body (MQTT 3.1.1 section 3.4): the packet identifier only. The fixed header has already
    /// checked that the remaining length is 2.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PubAckPacket {
        let packetID = try body.readMQTTPacketID()
        try body.expectMQTTPacketEnd()
        return PubAckPacket(packetID: packetID)
    }

    var packetType: PacketType { .puback }

    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        return 2
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
    }
}
