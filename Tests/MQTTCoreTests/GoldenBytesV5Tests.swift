import MQTTCore
import NIOCore
import Testing

@Suite("Golden bytes from the MQTT 5.0 figures")
struct GoldenBytesV5Tests {
    @Test("every packet type appears in the MQTT 5 golden tables")
    func everyPacketTypeCovered() {
        let covered = Set(goldenPacketsV5.map(\.packet.type)).union(goldenAuthPackets.isEmpty ? [] : [.auth])
        #expect(covered == Set(PacketType.allCases))
    }

    @Test("encoding for MQTT 5 produces the golden bytes", arguments: goldenPacketsV5)
    func encodesToGoldenBytes(_ golden: GoldenPacket) throws {
        #expect(try encodedV5(golden.packet) == golden.bytes)
    }

    @Test("decoding the golden bytes on an MQTT 5 connection produces the packet", arguments: goldenPacketsV5)
    func decodesGoldenBytes(_ golden: GoldenPacket) throws {
        #expect(try decodedSingle(golden.bytes, decoder: version5Decoder()) == golden.packet)
        #expect(try decodedV5(golden.bytes) == .packet(golden.packet))
    }

    @Test("AUTH encodes to and decodes from its golden bytes", arguments: goldenAuthPackets.indices)
    func auth(_ index: Int) throws {
        let golden = goldenAuthPackets[index]
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(golden.packet, into: &buffer)
        #expect(buffer.bytes == golden.bytes, "\(golden.name)")
        #expect(try decodedV5(golden.bytes) == .auth(golden.packet), "\(golden.name)")
    }

    @Test("every property identifier of table 2-4 has a golden entry")
    func everyPropertyCovered() {
        let covered = Set(goldenProperties.flatMap { $0.properties.map(\.identifier) })
        #expect(covered == Set(MQTTPropertyIdentifier.allCases))
    }

    @Test("a property decodes from its golden bytes", arguments: goldenProperties)
    func propertyDecodes(_ golden: GoldenProperty) throws {
        let bytes = PropertyCarrier.bytes(golden.context, golden.bytes)
        if let packet = PropertyCarrier.packet(golden.context, golden.properties) {
            #expect(try decodedV5(bytes) == .packet(packet))
        } else {
            #expect(try decodedV5(bytes) == .auth(PropertyCarrier.authWithProperties(golden.properties)))
        }
    }

    @Test("a property encodes to its golden bytes", arguments: goldenProperties)
    func propertyEncodes(_ golden: GoldenProperty) throws {
        let expected = PropertyCarrier.bytes(golden.context, golden.bytes)
        var buffer = ByteBuffer()
        if let packet = PropertyCarrier.packet(golden.context, golden.properties) {
            try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer)
        } else {
            try MQTTPacketEncoder.encode(PropertyCarrier.authWithProperties(golden.properties), into: &buffer)
        }
        #expect(buffer.bytes == expected)
    }

    @Test("the convenience accessors read the decoded properties")
    func accessors() throws {
        let connack: [UInt8] = Wire.packet(
            0x20,
            [0x00, 0x00] + PropertyCarrier.block(
                [0x11, 0x00, 0x00, 0x0E, 0x10, 0x21, 0x00, 0x05, 0x24, 0x01, 0x25, 0x00, 0x27, 0x00, 0x00, 0x10, 0x00]
                    + [0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x31, 0x26, 0x00, 0x01, 0x6B, 0x00, 0x01, 0x32]))
        guard case .packet(.connack(let decoded))? = try decodedV5(connack) else {
            Issue.record("not a CONNACK")
            return
        }
        let properties = decoded.properties
        #expect(properties.sessionExpiryInterval == 3600)
        #expect(properties.receiveMaximum == 5)
        #expect(properties.maximumQoS == .atLeastOnce)
        #expect(properties.retainAvailable == false)
        #expect(properties.maximumPacketSize == 4096)
        #expect(properties.topicAliasMaximum == nil)
        #expect(properties.userProperties.map(\.0) == ["k", "k"])
        #expect(properties.userProperties.map(\.1) == ["1", "2"])
    }

    @Test("3.1.1 CONNACK and SUBACK codes map to their MQTT 5 equivalents and back")
    func versionMappings() {
        for code in ConnectReturnCode.allCases {
            #expect(ConnectReturnCode(MQTTReasonCode(code)) == code)
            #expect(MQTTReasonCode(code).isValid(in: .connack))
        }
        #expect(ConnAckPacket(returnCode: .badUsernameOrPassword).reasonCode == .badUserNameOrPassword)
        #expect(ConnAckPacket(reasonCode: .banned).returnCode == .notAuthorized)
        #expect(ConnAckPacket(reasonCode: .serverBusy).returnCode == .serverUnavailable)
        #expect(SubAckPacket(packetID: 1, reasonCodes: [.grantedQoS2, .quotaExceeded]).returnCodes == [.granted(.exactlyOnce), .failure])
    }

    @Test("an MQTT 5 failure in a SUBACK or CONNACK is written as the nearest 3.1.1 code")
    func failuresEncodedFor311() throws {
        #expect(try encoded(.suback(SubAckPacket(packetID: 1, reasonCodes: [.grantedQoS1, .notAuthorized]))) == [0x90, 0x04, 0x00, 0x01, 0x01, 0x80])
        #expect(try encoded(.connack(ConnAckPacket(reasonCode: .banned))) == [0x20, 0x02, 0x00, 0x05])
    }
}
