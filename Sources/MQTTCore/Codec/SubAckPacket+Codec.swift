import NIOCore

extension SubAckPacket: MQTTPacketBodyEncodable {
    /// Decodes a SUBACK body (MQTT 3.1.1 section 3.9): packet identifier, then one return code per filter.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> SubAckPacket {
        let packetID = try body.readMQTTPacketID()
        guard body.readableBytes > 0 else { throw .subAckWithoutReturnCodes }
        var returnCodes: [SubAckReturnCode] = []
        returnCodes.reserveCapacity(body.readableBytes)
        for byte in body.readableBytesView {
            guard let returnCode = SubAckReturnCode(rawValue: byte) else { throw .invalidSubAckReturnCode(byte) }
            returnCodes.append(returnCode)
        }
        body.moveReaderIndex(forwardBy: body.readableBytes)
        return SubAckPacket(packetID: packetID, returnCodes: returnCodes)
    }

    var packetType: PacketType { .suback }

    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !returnCodes.isEmpty else { throw .subAckWithoutReturnCodes }
        return 2 + returnCodes.count
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        for returnCode in returnCodes {
            buffer.writeInteger(returnCode.rawValue)
        }
    }
}
