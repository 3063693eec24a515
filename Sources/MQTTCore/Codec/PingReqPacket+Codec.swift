import NIOCore

extension PingReqPacket: MQTTPacketBodyEncodable {
    /// Decodes a PINGREQ body (MQTT 3.1.1 section 3.12), which is empty; the fixed header has already checked that
    /// the remaining length is 0.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> PingReqPacket {
        try body.expectMQTTPacketEnd()
        return PingReqPacket()
    }

    var packetType: PacketType { .pingreq }

    func remainingLength() throws(MQTTCodecError) -> Int { 0 }

    func encodeBody(into buffer: inout ByteBuffer) {}
}
