import NIOCore

/// What the encoder needs from a packet type that has an MQTT 5 form different from its 3.1.1 one. The 3.1.1
/// methods of ``MQTTPacketBodyEncodable`` stay as they were, so that MQTT 5 costs the 3.1.1 paths nothing.
protocol MQTT5PacketBodyEncodable: MQTTPacketBodyEncodable {
    /// Validates the packet for MQTT 5 and returns its remaining length.
    func remainingLengthV5() throws(MQTTCodecError) -> Int
    /// Writes the MQTT 5 variable header and payload; only called after ``remainingLengthV5()`` succeeded.
    func encodeBodyV5(into buffer: inout ByteBuffer)
}

extension MQTTReasonCode {
    /// Returns the code when MQTT 5.0 allows it in `type`; throws ``MQTTCodecError/invalidReasonCode(_:packetType:)``
    /// otherwise (a Malformed Packet on receipt, a refusal to encode on sending).
    func validated(for type: PacketType) throws(MQTTCodecError) -> MQTTReasonCode {
        guard isValid(in: type) else { throw .invalidReasonCode(rawValue, packetType: type) }
        return self
    }

    /// Reads a reason code byte and checks it against `type`.
    static func read(from body: inout ByteBuffer, for type: PacketType) throws(MQTTCodecError) -> MQTTReasonCode {
        try MQTTReasonCode(rawValue: body.readMQTTByte()).validated(for: type)
    }
}

extension MQTTPropertyContext {
    /// The property context of a packet type that carries properties (every type but PINGREQ and PINGRESP);
    /// ``unsubscribe``'s user-property-only set for the others, which never reach this.
    static func of(_ type: PacketType) -> MQTTPropertyContext {
        MQTTPropertyContext(type) ?? .unsubscribe
    }
}

// MARK: CONNACK

extension ConnAckPacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 CONNACK body (MQTT 5.0 section 3.2): acknowledge flags, reason code, properties.
    ///
    /// A two-byte body is read as a 3.1.1 CONNACK: a server that does not speak MQTT 5 (this package's broker
    /// among them) answers a level-5 CONNECT that way, with 3.1.1 return code 0x01, and a client must understand it.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> ConnAckPacket {
        if body.readableBytes == 2 { return try decode(from: &body) }
        let acknowledgeFlags = try body.readMQTTByte()
        guard acknowledgeFlags & 0xFE == 0 else { throw .connAckReservedFlagsSet(acknowledgeFlags) }
        let reasonCode = try MQTTReasonCode.read(from: &body, for: .connack)
        let sessionPresent = acknowledgeFlags & 0x01 != 0
        if sessionPresent, reasonCode != .success { throw .sessionPresentWithErrorReturnCode }  // MQTT-3.2.2-6
        let properties = try MQTTProperties.decode(from: &body, context: .connack)
        try body.expectMQTTPacketEnd()
        return ConnAckPacket(sessionPresent: sessionPresent, reasonCode: reasonCode, properties: properties)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try reasonCode.validated(for: .connack)
        if sessionPresent, reasonCode != .success { throw .sessionPresentWithErrorReturnCode }
        return 2 + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .connack))
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(sessionPresent ? 1 : 0))
        buffer.writeInteger(reasonCode.rawValue)
        properties.encode(into: &buffer)
    }
}

// MARK: PUBACK, PUBREC, PUBREL, PUBCOMP

extension MQTTIdentifierOnlyPacket {
    /// Decodes an MQTT 5 acknowledgement body longer than its packet identifier (MQTT 5.0 sections 3.4 to 3.7): a
    /// reason code, then properties if the remaining length is 4 or more (below that the property length is
    /// omitted and there are none).
    static func decodeV5(from body: inout ByteBuffer, type: PacketType) throws(MQTTCodecError) -> Self {
        let packetID = try body.readMQTTPacketID()
        guard body.readableBytes > 0 else { return Self(packetID: packetID, reasonCode: .success, properties: .none) }
        let reasonCode = try MQTTReasonCode.read(from: &body, for: type)
        var properties = MQTTProperties.none
        if body.readableBytes > 0 {
            properties = try MQTTProperties.decode(from: &body, context: .of(type))
            try body.expectMQTTPacketEnd()
        }
        return Self(packetID: packetID, reasonCode: reasonCode, properties: properties)
    }

    /// The remaining length of the shortest MQTT 5 form: 2 for success without properties, 3 for another reason
    /// code without properties, else reason code and properties.
    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try validatedForEncoding(packetID: packetID)
        _ = try reasonCode.validated(for: packetType)
        if properties.isEmpty { return reasonCode == .success ? 2 : 3 }
        return 3 + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .of(packetType)))
    }

    /// Writes the body in the form ``remainingLengthV5()`` sized.
    func encodeBodyV5(into buffer: inout ByteBuffer) {
        buffer.writeInteger(packetID)
        if properties.isEmpty, reasonCode == .success { return }
        buffer.writeInteger(reasonCode.rawValue)
        if !properties.isEmpty { properties.encode(into: &buffer) }
    }
}

// MARK: DISCONNECT

extension DisconnectPacket: MQTT5PacketBodyEncodable {
    /// Decodes an MQTT 5 DISCONNECT body (MQTT 5.0 section 3.14): empty for a normal disconnection, else a reason
    /// code, then properties if any bytes remain.
    static func decodeV5(from body: inout ByteBuffer) throws(MQTTCodecError) -> DisconnectPacket {
        guard body.readableBytes > 0 else { return DisconnectPacket() }
        let reasonCode = try MQTTReasonCode.read(from: &body, for: .disconnect)
        var properties = MQTTProperties.none
        if body.readableBytes > 0 {
            properties = try MQTTProperties.decode(from: &body, context: .disconnect)
            try body.expectMQTTPacketEnd()
        }
        return DisconnectPacket(reasonCode: reasonCode, properties: properties)
    }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try reasonCode.validated(for: .disconnect)
        if properties.isEmpty { return reasonCode == .normalDisconnection ? 0 : 1 }
        return 1 + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .disconnect))
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        if properties.isEmpty, reasonCode == .normalDisconnection { return }
        buffer.writeInteger(reasonCode.rawValue)
        if !properties.isEmpty { properties.encode(into: &buffer) }
    }
}

// MARK: AUTH

extension AuthPacket: MQTT5PacketBodyEncodable {
    /// Decodes an AUTH body (MQTT 5.0 section 3.15): empty for success without properties, else a reason code and
    /// properties, which must name the Authentication Method.
    static func decode(from body: inout ByteBuffer) throws(MQTTCodecError) -> AuthPacket {
        guard body.readableBytes > 0 else { return AuthPacket() }
        let reasonCode = try MQTTReasonCode.read(from: &body, for: .auth)
        let properties = try MQTTProperties.decode(from: &body, context: .auth)
        try body.expectMQTTPacketEnd()
        guard properties.authenticationMethod != nil else { throw .missingAuthenticationMethod }
        return AuthPacket(reasonCode: reasonCode, properties: properties)
    }

    var packetType: PacketType { .auth }

    /// AUTH exists only in MQTT 5; its 3.1.1 methods are the MQTT 5 ones so that the encoder needs no special case.
    func remainingLength() throws(MQTTCodecError) -> Int { try remainingLengthV5() }

    func encodeBody(into buffer: inout ByteBuffer) { encodeBodyV5(into: &buffer) }

    func remainingLengthV5() throws(MQTTCodecError) -> Int {
        _ = try reasonCode.validated(for: .auth)
        if properties.isEmpty, reasonCode == .success { return 0 }
        guard properties.authenticationMethod != nil else { throw .missingAuthenticationMethod }
        return 1 + MQTTProperties.wireSize(propertyLength: try properties.encodedLength(in: .auth))
    }

    func encodeBodyV5(into buffer: inout ByteBuffer) {
        if properties.isEmpty, reasonCode == .success { return }
        buffer.writeInteger(reasonCode.rawValue)
        properties.encode(into: &buffer)
    }
}
