import NIOCore

extension DisconnectPacket: MQTTPacketBodyEncodable {
    /// Decodes a DISCONNECT body (MQTT 3.1.1 section 3.14), which is empty; the fixed header has already checked that
    /// the remaining length is 0.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> DisconnectPacket {
        try body.expectMQTTPacketEnd()
        return DisconnectPacket()
    }

    var packetType: PacketType { .disconnect }

    func remainingLength() throws(MQTTCodecError) -> Int { 0 }

    func encodeBody(into buffer: inout ByteBuffer) {}
}
