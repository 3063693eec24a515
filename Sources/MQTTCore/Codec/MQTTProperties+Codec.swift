import NIOCore

extension MQTTProperties {
    /// Reads a property length and the properties it covers (MQTT 5.0 section 2.2.2), checking each against
    /// `context`: its identifier must be defined and allowed there, it must not repeat unless the spec lets it, and
    /// its value must be one the spec allows.
    static func decode(from body: inout ByteBuffer, context: MQTTPropertyContext) throws(MQTTCodecError)
        -> MQTTProperties
    {
        let length = try body.readMQTTVariableByteInteger()
        // Most packets carry none: no slice (and its reference counting) for an empty list.
        guard length > 0 else { return MQTTProperties() }
        guard var block = body.readSlice(length: length) else {
            throw .propertyLengthExceedsPacket(declared: length, available: body.readableBytes)
        }
        var entries: [MQTTProperty] = []
        var seen: UInt64 = 0  // one bit per identifier (all are below 64)
        while block.readableBytes > 0 {
            let rawIdentifier = try block.readMQTTVariableByteInteger()
            guard let byte = UInt8(exactly: rawIdentifier), let identifier = MQTTPropertyIdentifier(rawValue: byte)
            else { throw .unknownPropertyIdentifier(rawIdentifier) }
            guard identifier.isAllowed(in: context) else { throw .propertyNotAllowed(identifier, in: context) }
            let bit = UInt64(1) << identifier.rawValue
            if seen & bit != 0, !identifier.mayRepeat(in: context) { throw .duplicateProperty(identifier) }
            seen |= bit
            let property = try readValue(of: identifier, from: &block)
            try property.validate()
            entries.append(property)
        }
        let properties = MQTTProperties(entries)
        if seen & 1 << MQTTPropertyIdentifier.authenticationData.rawValue != 0,
            seen & 1 << MQTTPropertyIdentifier.authenticationMethod.rawValue == 0
        {
            throw .authenticationDataWithoutMethod
        }
        return properties
    }

    /// Reads the value of a property whose identifier has been read.
    private static func readValue(of identifier: MQTTPropertyIdentifier, from block: inout ByteBuffer)
        throws(MQTTCodecError) -> MQTTProperty
    {
        switch identifier {
        case .payloadFormatIndicator: return .payloadFormatIndicator(try block.readMQTTByte())
        case .messageExpiryInterval: return .messageExpiryInterval(try block.readMQTTUInt32())
        case .contentType: return .contentType(try block.readMQTTString())
        case .responseTopic: return .responseTopic(try block.readMQTTString())
        case .correlationData: return .correlationData(try block.readMQTTBinaryBytes())
        case .subscriptionIdentifier: return .subscriptionIdentifier(try block.readMQTTVariableByteInteger())
        case .sessionExpiryInterval: return .sessionExpiryInterval(try block.readMQTTUInt32())
        case .assignedClientIdentifier: return .assignedClientIdentifier(try block.readMQTTString())
        case .serverKeepAlive: return .serverKeepAlive(try block.readMQTTUInt16())
        case .authenticationMethod: return .authenticationMethod(try block.readMQTTString())
        case .authenticationData: return .authenticationData(try block.readMQTTBinaryBytes())
        case .requestProblemInformation: return .requestProblemInformation(try readFlag(identifier, from: &block))
        case .willDelayInterval: return .willDelayInterval(try block.readMQTTUInt32())
        case .requestResponseInformation: return .requestResponseInformation(try readFlag(identifier, from: &block))
        case .responseInformation: return .responseInformation(try block.readMQTTString())
        case .serverReference: return .serverReference(try block.readMQTTString())
        case .reasonString: return .reasonString(try block.readMQTTString())
        case .receiveMaximum: return .receiveMaximum(try block.readMQTTUInt16())
        case .topicAliasMaximum: return .topicAliasMaximum(try block.readMQTTUInt16())
        case .topicAlias: return .topicAlias(try block.readMQTTUInt16())
        case .maximumQoS: return .maximumQoS(try block.readMQTTByte())
        case .retainAvailable: return .retainAvailable(try readFlag(identifier, from: &block))
        case .userProperty:
            let key = try block.readMQTTString()
            return .userProperty(key: key, value: try block.readMQTTString())
        case .maximumPacketSize: return .maximumPacketSize(try block.readMQTTUInt32())
        case .wildcardSubscriptionAvailable:
            return .wildcardSubscriptionAvailable(try readFlag(identifier, from: &block))
        case .subscriptionIdentifierAvailable:
            return .subscriptionIdentifierAvailable(try readFlag(identifier, from: &block))
        case .sharedSubscriptionAvailable: return .sharedSubscriptionAvailable(try readFlag(identifier, from: &block))
        }
    }

    /// Reads a byte property whose only values are 0 and 1; any other is a Protocol Error.
    private static func readFlag(_ identifier: MQTTPropertyIdentifier, from block: inout ByteBuffer)
        throws(MQTTCodecError) -> Bool
    {
        let byte = try block.readMQTTByte()
        guard byte <= 1 else { throw .invalidPropertyValue(identifier, value: Int(byte)) }
        return byte == 1
    }

    // MARK: Encoding

    /// Checks the list for `context` as the decoder would and returns the property length (without its own
    /// variable byte integer).
    func encodedLength(in context: MQTTPropertyContext) throws(MQTTCodecError) -> Int {
        var seen: UInt64 = 0
        var length = 0
        for entry in entries {
            let identifier = entry.identifier
            guard identifier.isAllowed(in: context) else { throw .propertyNotAllowed(identifier, in: context) }
            let bit = UInt64(1) << identifier.rawValue
            if seen & bit != 0, !identifier.mayRepeat(in: context) { throw .duplicateProperty(identifier) }
            seen |= bit
            try entry.validate()
            try entry.validateFieldLengths()
            length += entry.byteCount
        }
        if seen & 1 << MQTTPropertyIdentifier.authenticationData.rawValue != 0,
            seen & 1 << MQTTPropertyIdentifier.authenticationMethod.rawValue == 0
        {
            throw .authenticationDataWithoutMethod
        }
        guard length <= MQTTPacketDecoder.protocolMaximumPacketSize else {
            throw .packetTooLarge(size: length, maximum: MQTTPacketDecoder.protocolMaximumPacketSize)
        }
        return length
    }

    /// The property length of an already validated list (see ``encodedLength(in:)``).
    var byteCount: Int { entries.reduce(0) { $0 + $1.byteCount } }

    /// The bytes the property length and the properties take, for a `length` from ``encodedLength(in:)``.
    static func wireSize(propertyLength length: Int) -> Int {
        MQTTWireSize.variableByteInteger(length) + length
    }

    /// Writes the property length, then the properties; only called after ``encodedLength(in:)`` succeeded.
    func encode(into buffer: inout ByteBuffer) {
        buffer.writeMQTTVariableByteInteger(byteCount)
        for entry in entries {
            entry.encode(into: &buffer)
        }
    }
}

extension MQTTProperty {
    /// Throws when the value is one the spec forbids (a Protocol Error on receipt).
    func validate() throws(MQTTCodecError) {
        switch self {
        case .payloadFormatIndicator(let value), .maximumQoS(let value):
            guard value <= 1 else { throw .invalidPropertyValue(identifier, value: Int(value)) }
        case .subscriptionIdentifier(let value):
            guard (1...MQTTPacketDecoder.protocolMaximumPacketSize).contains(value) else {
                throw .invalidPropertyValue(identifier, value: value)
            }
        case .receiveMaximum(let value), .topicAlias(let value):
            guard value != 0 else { throw .invalidPropertyValue(identifier, value: 0) }
        case .maximumPacketSize(let value):
            guard value != 0 else { throw .invalidPropertyValue(identifier, value: 0) }
        case .responseTopic(let topic):
            // A Response Topic is a topic name: no wildcards (MQTT-3.3.2-14), not empty.
            try MQTTTopic.validateName(topic)
        default:
            return
        }
    }

    /// Throws when a string or binary value does not fit its two-byte length prefix.
    func validateFieldLengths() throws(MQTTCodecError) {
        switch self {
        case .contentType(let string), .responseTopic(let string), .assignedClientIdentifier(let string),
            .authenticationMethod(let string), .responseInformation(let string), .serverReference(let string),
            .reasonString(let string):
            _ = try MQTTWireSize.string(string)
        case .correlationData(let bytes), .authenticationData(let bytes):
            _ = try MQTTWireSize.binary(byteCount: bytes.count)
        case .userProperty(let key, let value):
            _ = try MQTTWireSize.string(key)
            _ = try MQTTWireSize.string(value)
        default:
            return
        }
    }

    /// The identifier byte plus the value's wire size.
    var byteCount: Int {
        switch self {
        case .payloadFormatIndicator, .requestProblemInformation, .requestResponseInformation, .maximumQoS,
            .retainAvailable, .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable,
            .sharedSubscriptionAvailable:
            return 2
        case .serverKeepAlive, .receiveMaximum, .topicAliasMaximum, .topicAlias: return 3
        case .messageExpiryInterval, .sessionExpiryInterval, .willDelayInterval, .maximumPacketSize: return 5
        case .subscriptionIdentifier(let value): return 1 + MQTTWireSize.variableByteInteger(value)
        case .contentType(let string), .responseTopic(let string), .assignedClientIdentifier(let string),
            .authenticationMethod(let string), .responseInformation(let string), .serverReference(let string),
            .reasonString(let string):
            return 3 + string.utf8.count
        case .correlationData(let bytes), .authenticationData(let bytes): return 3 + bytes.count
        case .userProperty(let key, let value): return 5 + key.utf8.count + value.utf8.count
        }
    }

    /// Writes identifier and value; only called after the list's ``MQTTProperties/encodedLength(in:)`` succeeded.
    func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(identifier.rawValue)
        switch self {
        case .payloadFormatIndicator(let value), .maximumQoS(let value): buffer.writeInteger(value)
        case .requestProblemInformation(let flag), .requestResponseInformation(let flag), .retainAvailable(let flag),
            .wildcardSubscriptionAvailable(let flag), .subscriptionIdentifierAvailable(let flag),
            .sharedSubscriptionAvailable(let flag):
            buffer.writeInteger(UInt8(flag ? 1 : 0))
        case .serverKeepAlive(let value), .receiveMaximum(let value), .topicAliasMaximum(let value),
            .topicAlias(let value):
            buffer.writeInteger(value)
        case .messageExpiryInterval(let value), .sessionExpiryInterval(let value), .willDelayInterval(let value),
            .maximumPacketSize(let value):
            buffer.writeInteger(value)
        case .subscriptionIdentifier(let value): buffer.writeMQTTVariableByteInteger(value)
        case .contentType(let string), .responseTopic(let string), .assignedClientIdentifier(let string),
            .authenticationMethod(let string), .responseInformation(let string), .serverReference(let string),
            .reasonString(let string):
            buffer.writeMQTTString(string)
        case .correlationData(let bytes), .authenticationData(let bytes): buffer.writeMQTTBinary(bytes)
        case .userProperty(let key, let value):
            buffer.writeMQTTString(key)
            buffer.writeMQTTString(value)
        }
    }
}

extension ByteBuffer {
    /// Reads a big-endian four-byte integer.
    mutating func readMQTTUInt32() throws(MQTTCodecError) -> UInt32 {
        guard let value = readInteger(endianness: .big, as: UInt32.self) else { throw .unexpectedEndOfPacket }
        return value
    }

    /// Reads a variable byte integer inside a packet body (MQTT 5.0 section 1.5.5), which must use the fewest
    /// bytes its value needs (MQTT-1.5.5-1): a longer form would not survive re-encoding unchanged.
    mutating func readMQTTVariableByteInteger() throws(MQTTCodecError) -> Int {
        let decoded: (value: Int, byteCount: Int)?
        do {
            decoded = try getMQTTVariableByteInteger(at: readerIndex)
        } catch {
            throw .malformedVariableByteInteger
        }
        guard let (value, byteCount) = decoded else { throw .unexpectedEndOfPacket }
        guard byteCount == MQTTWireSize.variableByteInteger(value) else { throw .malformedVariableByteInteger }
        moveReaderIndex(forwardBy: byteCount)
        return value
    }
}
