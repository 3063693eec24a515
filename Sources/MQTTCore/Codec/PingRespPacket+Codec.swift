import NIOCore

extension PingRespPacket: MQTTPacketBodyEncodable {
    /// Decodes a PINGRESP body (MQTT 3.1.1 section 3.13), which is empty; the fixed header has already checked that
    /// the remaining length is 0.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PingRespPacket {
        try body.expectMQTTPacketEnd()
        return PingRespPacket()
    }

    var packetType: PacketType { .pingresp }

    func remainingLength() throws(MQTTCodecError) -> Int { 0 }

    func encodeBody(into buffer: inout ByteBuffer) {}
}
