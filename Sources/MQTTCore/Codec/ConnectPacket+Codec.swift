import NIOCore

/// CONNECT flag bits (MQTT 3.1.1 section 3.1.2.3).
private enum ConnectFlags {
    static let reserved: UInt8 = 0x01
    static let cleanSession: UInt8 = 0x02
    static let will: UInt8 = 0x04
    static let willQoSShift: UInt8 = 3
    static let willQoSMask: UInt8 = 0x18
    static let willRetain: UInt8 = 0x20
    static let password: UInt8 = 0x40
    static let username: UInt8 = 0x80
}

extension ConnectPacket: MQTTPacketBodyEncodable {
    /// Decodes a CONNECT body (MQTT 3.1.1 section 3.1; MQTT 3.1 "MQIsdp" level 3 too; MQTT 5.0 section 3.1 when
    /// `acceptsVersion5`, otherwise level 5 is refused like any unsupported level).
    ///
    /// Protocol name and level are checked before anything else, so that an unsupported level is reported as
    /// ``MQTTCodecError/unsupportedProtocolLevel(_:)`` (answered with CONNACK 0x01) whatever follows.
    static func decode(from body: inout ByteBuffer, acceptsVersion5: Bool = false) throws(MQTTCodecError)
        -> ConnectPacket
    {
        let (version, isBridge) = try decodeProtocolVersion(from: &body, acceptsVersion5: acceptsVersion5)
        let isVersion5 = version == .v5
        let flags = try body.readMQTTByte()
        let keepAlive = try body.readMQTTUInt16()

        guard flags & ConnectFlags.reserved == 0 else { throw .connectReservedFlagSet }
        let hasWill = flags & ConnectFlags.will != 0
        let willQoSBits = (flags & ConnectFlags.willQoSMask) >> ConnectFlags.willQoSShift
        let willRetain = flags & ConnectFlags.willRetain != 0
        if !hasWill, willQoSBits != 0 || willRetain { throw .willQoSOrRetainWithoutWill }
        guard let willQoS = QoS(rawValue: willQoSBits) else { throw .invalidWillQoS }
        let hasUsername = flags & ConnectFlags.username != 0
        let hasPassword = flags & ConnectFlags.password != 0
        // MQTT 5 allows a password without a user name (MQTT 5.0 3.1.2.9).
        if hasPassword, !hasUsername, !isVersion5 { throw .passwordWithoutUsername }
        let cleanSession = flags & ConnectFlags.cleanSession != 0
        let properties = isVersion5 ? try MQTTProperties.decode(from: &body, context: .connect) : .none

        let clientIdentifier = try body.readMQTTString()
        if clientIdentifier.isEmpty {
            if version == .v3_1 { throw .emptyClientIdentifierInMQTT31 }
            // MQTT 5 lets the server assign an identifier whatever Clean Start says (MQTT 5.0 3.1.3.1).
            if !cleanSession, !isVersion5 { throw .emptyClientIdentifierWithoutCleanSession }
        }
        var will: Will?
        if hasWill {
            let willProperties = isVersion5 ? try MQTTProperties.decode(from: &body, context: .will) : .none
            let topic = try body.readMQTTString()
            try MQTTTopic.validateName(topic)
            let payload = try body.readMQTTBinarySlice()
            will = Will(topic: topic, payload: payload, qos: willQoS, retain: willRetain, properties: willProperties)
        }
        var username: String?
        if hasUsername { username = try body.readMQTTString() }
        var password: [UInt8]?
        if hasPassword { password = try body.readMQTTBinaryBytes() }
        try body.expectMQTTPacketEnd()

        var packet = ConnectPacket(
            protocolVersion: version,
            cleanSession: cleanSession,
            keepAliveSeconds: keepAlive,
            clientIdentifier: clientIdentifier,
            will: will,
            username: username,
            password: password,
            properties: properties
        )
        packet.isBridge = isBridge
        return packet
    }

    /// Reads protocol name and level and checks that they belong together.
    /// A level with the high bit set (0x83, 0x84, 0x85) is a bridge announcing itself (mosquitto's
    /// `try_private`).
    private static func decodeProtocolVersion(from body: inout ByteBuffer, acceptsVersion5: Bool)
        throws(MQTTCodecError) -> (MQTTProtocolVersion, isBridge: Bool)
    {
        let name = try body.readMQTTString()
        let rawLevel = try body.readMQTTByte()
        let isBridge = rawLevel & 0x80 != 0
        let level = rawLevel & 0x7F
        let expectedLevel: MQTTProtocolVersion
        switch name {
        case MQTTProtocolVersion.v3_1_1.protocolName:
            if acceptsVersion5, level == MQTTProtocolVersion.v5.rawValue { return (.v5, isBridge) }
            expectedLevel = .v3_1_1
        case MQTTProtocolVersion.v3_1.protocolName: expectedLevel = .v3_1
        default: throw .invalidProtocolName(name)
        }
        guard level == expectedLevel.rawValue else { throw .unsupportedProtocolLevel(rawLevel) }
        return (expectedLevel, isBridge)
    }

    var packetType: PacketType { .connect }

    func remainingLength() throws(MQTTCodecError) -> Int {
        let isVersion5 = protocolVersion == .v5
        if password != nil, username == nil, !isVersion5 { throw .passwordWithoutUsername }
        var length = try MQTTWireSize.string(protocolVersion.protocolName) + 1 + 1 + 2
        if isVersion5 {
            length += MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .connect))
        }
        length += try MQTTWireSize.string(clientIdentifier)
        if let will {
            if isVersion5 {
                length += MQTTProperties.wireSize(propertyLength: try will.properties.encodedLength(in: .will))
            }
            length += try MQTTWireSize.string(will.topic)
            length += try MQTTWireSize.binary(byteCount: will.payload.readableBytes)
        }
        if let username { length += try MQTTWireSize.string(username) }
        if let password { length += try MQTTWireSize.binary(byteCount: password.count) }
        return length
    }

    func encodeBody(into buffer: inout ByteBuffer) {
        var flags: UInt8 = 0
        if cleanSession { flags |= ConnectFlags.cleanSession }
        if let will {
            flags |= ConnectFlags.will | will.qos.rawValue << ConnectFlags.willQoSShift
            if will.retain { flags |= ConnectFlags.willRetain }
        }
        if username != nil { flags |= ConnectFlags.username }
        if password != nil { flags |= ConnectFlags.password }

        buffer.writeMQTTString(protocolVersion.protocolName)
        buffer.writeInteger(protocolVersion.rawValue | (isBridge ? 0x80 : 0))
        buffer.writeInteger(flags)
        buffer.writeInteger(keepAliveSeconds)
        let isVersion5 = protocolVersion == .v5
        if isVersion5 { properties.encode(into: &buffer) }
        buffer.writeMQTTString(clientIdentifier)
        if let will {
            if isVersion5 { will.properties.encode(into: &buffer) }
            buffer.writeMQTTString(will.topic)
            buffer.writeMQTTBinary(will.payload)
        }
        if let username { buffer.writeMQTTString(username) }
        if let password { buffer.writeMQTTBinary(password) }
    }
}
