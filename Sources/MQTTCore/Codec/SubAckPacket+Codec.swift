import NIOCore

extension SubAckPacket: MQTTPacketBodyEncodable {
    /// Decodes a SUBACK body (MQTT 3.1.1 section 3.9): packet identifier, then one return code per filter.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> SubAckPacket {
        let packetID = try body.readMQTTPacketID()
        guard body.readableBytes > 0 else { throw .subAckWithoutReturnCodes }
        var reasonCodes: [MQTTReasonCode] = []
        reasonCodes.reserveCapacity(body.readableBytes)
        for byte in body.readableBytesView {
            guard SubAckReturnCode(rawValue: byte) != nil else { throw .invalidSubAckReturnCode(byte) }
            reasonCodes.append(MQTTReasonCode(rawValue: byte))  // 0x00 to 0x02 and 0x80 mean the same in MQTT 5
        }
        body.moveReaderIndex(forwardBy: body.readableBytes)
        return SubAckPacket(packetID: packetID, reasonCodes: reasonCodes)
    }

    var packetType: PacketType { .suback }

    func remainingLength() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        guard !reasonCodes.isEmpty else { throw .subAckWithoutReturnCodes }
        return 2 + reasonCodes.count
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        for reasonCode in reasonCodes {
            // 3.1.1 has one failure code: every MQTT 5 failure becomes 0x80.
            buffer.writeInteger(SubAckReturnCode(reasonCode).rawValue)
        }
    }
}
