import NIOCore

extension ConnAckPacket: MQTTPacketBodyEncodable {
    /// Decodes a CONNACK body (MQTT 3.1.1 section 3.2): acknowledge flags, then the return code.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> ConnAckPacket {
        let acknowledgeFlags = try body.readMQTTByte()
        let rawReturnCode = try body.readMQTTByte()
        try body.expectMQTTPacketEnd()
        guard acknowledgeFlags & 0xFE == 0 else { throw .connAckReservedFlagsSet(acknowledgeFlags) }
        guard let returnCode = ConnectReturnCode(rawValue: rawReturnCode) else {
            throw .invalidConnAckReturnCode(rawReturnCode)
        }
        let sessionPresent = acknowledgeFlags & 0x01 != 0
        if sessionPresent, returnCode != .accepted { throw .sessionPresentWithErrorReturnCode }
        return ConnAckPacket(sessionPresent: sessionPresent, returnCode: returnCode)
    }

    var packetType: PacketType { .connack }

    func remainingLength() throws(MQTTCodecError) -> Int {
        if sessionPresent, returnCode != .accepted { throw .sessionPresentWithErrorReturnCode }
        return 2
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(sessionPresent ? 1 : 0))
        buffer.writeInteger(returnCode.rawValue)
    }
}
