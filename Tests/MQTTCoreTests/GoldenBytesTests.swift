import MQTTCore
import NIOCore
import Testing

@Suite("Golden bytes from the MQTT 3.1.1 figures")
struct GoldenBytesTests {
    @Test("every packet type appears in the golden table")
    func everyPacketTypeCovered() {
        let covered = Set(goldenPackets.map(\.packet.type))
        let expected = Set(PacketType.allCases.filter { $0 != .auth })
        #expect(covered == expected)
    }

    @Test("encoding produces the golden bytes", arguments: goldenPackets)
    func encodesToGoldenBytes(_ golden: GoldenPacket) throws {
        #expect(try encoded(golden.packet) == golden.bytes)
    }

    @Test("decoding the golden bytes produces the packet", arguments: goldenPackets)
    func decodesGoldenBytes(_ golden: GoldenPacket) throws {
        #expect(try decodedSingle(golden.bytes) == golden.packet)
    }

    @Test("encoding appends after what the buffer already holds")
    func encodeAppends() throws {
        var buffer = ByteBuffer(bytes: [0xAA])
        try MQTTPacketEncoder.encode(.pingreq(PingReqPacket()), into: &buffer)
        try MQTTPacketEncoder.encode(.puback(PubAckPacket(packetID: 1)), into: &buffer)
        #expect(buffer.bytes == [0xAA, 0xC0, 0x00, 0x40, 0x02, 0x00, 0x01])
    }

    @Test("an MQTTAcknowledgement encodes to the golden bytes of the packet it stands for", arguments: goldenPackets)
    func acknowledgementMatchesGoldenPacket(_ golden: GoldenPacket) throws {
        let acknowledgement: MQTTAcknowledgement
        switch golden.packet {
        case .puback(let packet): acknowledgement = MQTTAcknowledgement(.puback, packetID: packet.packetID)
        case .pubrec(let packet): acknowledgement = MQTTAcknowledgement(.pubrec, packetID: packet.packetID)
        case .pubrel(let packet): acknowledgement = MQTTAcknowledgement(.pubrel, packetID: packet.packetID)
        case .pubcomp(let packet): acknowledgement = MQTTAcknowledgement(.pubcomp, packetID: packet.packetID)
        case .connect, .connack, .publish, .subscribe, .suback, .unsubscribe, .unsuback, .pingreq, .pingresp,
            .disconnect:
            return
        }
        var buffer = ByteBuffer(bytes: [0xAA])
        try MQTTPacketEncoder.encode(acknowledgement, into: &buffer)
        #expect(buffer.bytes == [0xAA] + golden.bytes, "\(golden.name)")
    }

    @Test("every acknowledgement kind and edge identifier encodes as its packet does; identifier 0 is refused")
    func acknowledgementsAgreeWithPackets() throws {
        for packetID: UInt16 in [1, 0x00FF, 0x0100, 0xFFFF] {
            let pairs: [(MQTTAcknowledgement.Kind, MQTTPacket)] = [
                (.puback, .puback(PubAckPacket(packetID: packetID))),
                (.pubrec, .pubrec(PubRecPacket(packetID: packetID))),
                (.pubrel, .pubrel(PubRelPacket(packetID: packetID))),
                (.pubcomp, .pubcomp(PubCompPacket(packetID: packetID))),
            ]
            for (kind, packet) in pairs {
                var direct = ByteBuffer()
                try MQTTPacketEncoder.encode(MQTTAcknowledgement(kind, packetID: packetID), into: &direct)
                #expect(direct.bytes == (try encoded(packet)), "\(kind) \(packetID)")
                #expect(kind.packetType == packet.type)
            }
        }
        var buffer = ByteBuffer(bytes: [0xAA])
        #expect(throws: MQTTCodecError.zeroPacketIdentifier) {
            try MQTTPacketEncoder.encode(MQTTAcknowledgement(.pubcomp, packetID: 0), into: &buffer)
        }
        #expect(buffer.bytes == [0xAA])
    }

    @Test("MQTT 3.1 and 3.1.1 encode non-CONNECT packets identically")
    func version31SharesWireFormat() throws {
        for golden in goldenPackets {
            if case .connect = golden.packet { continue }
            var buffer = ByteBuffer()
            try MQTTPacketEncoder.encode(golden.packet, protocolVersion: .v3_1, into: &buffer)
            #expect(buffer.bytes == golden.bytes, "\(golden.name)")
        }
    }

    @Test("a decoded PUBLISH payload is a slice of the input, not a copy")
    func publishPayloadIsSlice() throws {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: [0x30, 0x07, 0x00, 0x01, 0x74, 0x64, 0x61, 0x74, 0x61])
        let packet = try decoder.decode(from: &buffer)
        guard case .publish(let publish) = packet else {
            Issue.record("expected PUBLISH, got \(String(describing: packet))")
            return
        }
        #expect(publish.payload == payload("data"))
        let sharesStorage = buffer.withUnsafeReadableBytes { input in
            publish.payload.withUnsafeReadableBytes { slice in
                // The slice's bytes sit just before the (now empty) readable region of the input buffer.
                slice.baseAddress.map { $0 + slice.count } == input.baseAddress
            }
        }
        #expect(sharesStorage)
    }
}

@Suite("Typed throws")
struct TypedThrowsTests {
    @Test("decode, encode and topic validation throw MQTTCodecError statically")
    func typedThrows() {
        var decoder = MQTTPacketDecoder()
        var buffer = ByteBuffer(bytes: [0x00, 0x00])
        do throws(MQTTCodecError) {
            _ = try decoder.decode(from: &buffer)
            Issue.record("expected an error")
        } catch {
            let typed: MQTTCodecError = error  // compiles only because the error is typed
            #expect(typed == .reservedPacketType(0))
        }
        do throws(MQTTCodecError) {
            try MQTTTopic.validateFilter("a/#/b")
            Issue.record("expected an error")
        } catch {
            #expect(error == .multiLevelWildcardNotLast)
        }
    }
}
