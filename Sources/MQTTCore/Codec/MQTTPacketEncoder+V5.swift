public import NIOCore

extension MQTTPacketEncoder {
    /// ``encode(_:protocolVersion:into:)`` for an MQTT 5 connection. CONNECT is written in its own
    /// ``ConnectPacket/protocolVersion``, as on any connection; PINGREQ and PINGRESP are the same in every version.
    static func encodeV5(_ packet: MQTTPacket, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        switch packet {
        case .connect(let connect): try writeCommon(connect, into: &buffer)
        case .connack(let connack): try writeV5(connack, into: &buffer)
        case .publish(let publish): try writeV5(publish, into: &buffer)
        case .puback(let puback): try writeAcknowledgementV5(puback, into: &buffer)
        case .pubrec(let pubrec): try writeAcknowledgementV5(pubrec, into: &buffer)
        case .pubrel(let pubrel): try writeAcknowledgementV5(pubrel, into: &buffer)
        case .pubcomp(let pubcomp): try writeAcknowledgementV5(pubcomp, into: &buffer)
        case .subscribe(let subscribe): try writeV5(subscribe, into: &buffer)
        case .suback(let suback): try writeV5(suback, into: &buffer)
        case .unsubscribe(let unsubscribe): try writeV5(unsubscribe, into: &buffer)
        case .unsuback(let unsuback): try writeV5(unsuback, into: &buffer)
        case .pingreq(let pingreq): try writeCommon(pingreq, into: &buffer)
        case .pingresp(let pingresp): try writeCommon(pingresp, into: &buffer)
        case .disconnect(let disconnect): try writeV5(disconnect, into: &buffer)
        }
    }

    /// Appends the wire form of an AUTH packet (MQTT 5 only, so no version to choose).
    /// - Throws: ``MQTTCodecError`` for a reason code other than 0x00, 0x18 and 0x19, properties AUTH does not
    ///   allow, or properties without an Authentication Method. `buffer` is unchanged on error.
    public static func encode(_ auth: AuthPacket, into buffer: inout ByteBuffer) throws(MQTTCodecError) {
        try writeV5(auth, into: &buffer)
    }

    /// Writes a packet whose wire form does not depend on the connection's version.
    private static func writeCommon(_ packet: some MQTTPacketBodyEncodable, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        let remainingLength = try packet.remainingLength()
        try writeHeader(
            firstByte: packet.packetType.rawValue << 4 | packet.fixedHeaderFlags, remainingLength: remainingLength,
            into: &buffer)
        packet.encodeBody(into: &buffer)
    }

    /// Writes the MQTT 5 form of a packet.
    private static func writeV5(_ packet: some MQTT5PacketBodyEncodable, into buffer: inout ByteBuffer)
        throws(MQTTCodecError)
    {
        let remainingLength = try packet.remainingLengthV5()
        try writeHeader(
            firstByte: packet.packetType.rawValue << 4 | packet.fixedHeaderFlags, remainingLength: remainingLength,
            into: &buffer)
        packet.encodeBodyV5(into: &buffer)
    }

    /// Writes a PUBACK, PUBREC, PUBREL or PUBCOMP in MQTT 5: the 3.1.1 four bytes for success without properties,
    /// else with its reason code and properties.
    private static func writeAcknowledgementV5(
        _ packet: some MQTTIdentifierOnlyPacket, into buffer: inout ByteBuffer
    ) throws(MQTTCodecError) {
        let remainingLength = try packet.remainingLengthV5()
        let type = packet.packetType
        try writeHeader(
            firstByte: type.rawValue << 4 | FixedHeader.requiredFlags(of: type), remainingLength: remainingLength,
            into: &buffer)
        packet.encodeBodyV5(into: &buffer)
    }
}
