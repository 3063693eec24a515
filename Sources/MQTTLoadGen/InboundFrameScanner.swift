public import MQTTCore
public import NIOCore

/// One inbound packet as the generator needs it.
public enum InboundFrame: Sendable, Hashable {
    /// A PUBLISH: its QoS, packet identifier (0 at QoS 0) and payload stamp (nil if the payload is too short).
    case publish(qos: QoS, packetID: UInt16, stamp: PayloadStamp?)
    /// PUBACK, PUBREC, PUBREL or PUBCOMP.
    case acknowledgement(PacketType, packetID: UInt16)
    /// Any other packet, fully decoded.
    case control(MQTTPacket)
}

/// Splits the inbound byte stream into ``InboundFrame``s.
///
/// In ``LoadGenConfig/DecodePath/scan`` mode PUBLISH and the four acknowledgements are read in place from the
/// fixed header and the few fields needed (no topic string, no allocation); everything else goes through
/// ``MQTTPacketDecoder``. In ``LoadGenConfig/DecodePath/full`` mode every packet is decoded by ``MQTTPacketDecoder``.
///
/// In MQTT 5 the scan skips a PUBLISH's property block (its variable byte integer length and the properties) to
/// reach the payload, and leaves acknowledgements longer than their packet identifier (a reason code, properties)
/// to the decoder, which is set to MQTT 5 from the start: the CONNACK that answers a level-5 CONNECT already has
/// the MQTT 5 form (or the 3.1.1 form of a broker that refuses level 5, which the decoder also reads).
public struct InboundFrameScanner: Sendable {
    private var decoder: MQTTPacketDecoder
    private let path: LoadGenConfig.DecodePath
    /// Whether the connection speaks MQTT 5.
    private let version5: Bool

    /// Creates a scanner for a connection at `protocolVersion` (the level its CONNECT announced).
    public init(path: LoadGenConfig.DecodePath = .scan, protocolVersion: MQTTProtocolVersion = .v3_1_1) {
        self.path = path
        version5 = protocolVersion == .v5
        decoder = MQTTPacketDecoder(acceptsVersion5: version5)
        if version5 { decoder.protocolVersion = .v5 }
    }

    /// Reads the next whole packet from the front of `buffer`; nil (buffer unchanged) when it is incomplete.
    public mutating func next(from buffer: inout ByteBuffer) throws(LoadGenError) -> InboundFrame? {
        switch path {
        case .full: return try decodeFully(from: &buffer)
        case .scan: return try scan(from: &buffer)
        }
    }

    /// What ``scanBytes(_:)`` found at the front of the buffer.
    private enum ScanOutcome {
        /// The first packet is not complete yet.
        case incomplete
        /// A frame read in place, and the bytes it took.
        case frame(InboundFrame, byteCount: Int)
        /// A packet the scanner leaves to ``MQTTPacketDecoder``.
        case decode
        /// Bytes that are not MQTT.
        case malformed(String)
    }

    private mutating func scan(from buffer: inout ByteBuffer) throws(LoadGenError) -> InboundFrame? {
        // One access to the bytes per packet: every `ByteBuffer.getInteger` is an access of its own to the buffer's
        // storage, with a runtime exclusivity check, and a PUBLISH needs seven of them. In fan-in at QoS 2 the
        // generator's own turn is part of every round trip, so its cost per packet bounds what the run can measure.
        let version5 = version5
        switch buffer.withUnsafeReadableBytes({ Self.scanBytes($0, version5: version5) }) {
        case .incomplete:
            return nil
        case .frame(let frame, let byteCount):
            buffer.moveReaderIndex(forwardBy: byteCount)
            return frame
        case .decode:
            return try decodeFully(from: &buffer)
        case .malformed(let reason):
            throw .malformedPacket(reason)
        }
    }

    /// Reads the first packet of `bytes`: PUBLISH and the four acknowledgements in place, every field checked
    /// against the packet's end.
    private static func scanBytes(_ bytes: UnsafeRawBufferPointer, version5: Bool) -> ScanOutcome {
        guard let first = bytes.first else { return .incomplete }
        let length: (value: Int, byteCount: Int)?
        do {
            length = try bytes.mqttVariableByteInteger(at: 1)
        } catch {
            return .malformed("remaining length longer than 4 bytes")
        }
        guard let (remaining, lengthByteCount) = length else { return .incomplete }
        let bodyStart = 1 + lengthByteCount
        let end = bodyStart + remaining
        guard bytes.count >= end else { return .incomplete }
        switch first >> 4 {
        case PacketType.publish.rawValue:
            guard let qos = QoS(rawValue: (first >> 1) & 0b11), remaining >= 2 else {
                return .malformed("PUBLISH with QoS 3 or without topic")
            }
            var payloadStart = bodyStart + 2 + Int(bigEndianUInt16(bytes, at: bodyStart))
            var packetID: UInt16 = 0
            if qos != .atMostOnce {
                guard payloadStart + 2 <= end else { return .malformed("PUBLISH without packet identifier") }
                packetID = bigEndianUInt16(bytes, at: payloadStart)
                payloadStart += 2
            }
            guard payloadStart <= end else { return .malformed("PUBLISH topic longer than the packet") }
            if version5 {
                guard let propertiesEnd = propertiesEnd(bytes, at: payloadStart, packetEnd: end) else {
                    return .malformed("PUBLISH property block longer than the packet")
                }
                payloadStart = propertiesEnd
            }
            let stamp =
                end - payloadStart >= PayloadStamp.byteCount
                ? PayloadStamp.read(from: UnsafeRawBufferPointer(rebasing: bytes[payloadStart..<end])) : nil
            return .frame(.publish(qos: qos, packetID: packetID, stamp: stamp), byteCount: end)
        case PacketType.puback.rawValue, PacketType.pubrec.rawValue, PacketType.pubrel.rawValue,
            PacketType.pubcomp.rawValue:
            // MQTT 5: a reason code and properties may follow the identifier; the decoder reads and checks them.
            if version5, remaining > 2 { return .decode }
            guard remaining == 2, let type = PacketType(rawValue: first >> 4) else {
                return .malformed("acknowledgement with remaining length \(remaining)")
            }
            return .frame(.acknowledgement(type, packetID: bigEndianUInt16(bytes, at: bodyStart)), byteCount: end)
        default:
            return .decode
        }
    }

    /// Where an MQTT 5 property block starting at `offset` (a variable byte integer length, then the properties)
    /// ends; nil when its length is malformed or runs past `packetEnd`.
    private static func propertiesEnd(_ bytes: UnsafeRawBufferPointer, at offset: Int, packetEnd: Int) -> Int? {
        let packet = UnsafeRawBufferPointer(rebasing: bytes[..<packetEnd])
        guard let length = try? packet.mqttVariableByteInteger(at: offset) else { return nil }
        let end = offset + length.byteCount + length.value
        return end <= packetEnd ? end : nil
    }

    /// The big-endian `UInt16` at `offset`; the caller checked that both bytes are there.
    private static func bigEndianUInt16(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt16 {
        UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    private mutating func decodeFully(from buffer: inout ByteBuffer) throws(LoadGenError) -> InboundFrame? {
        let packet: MQTTPacket?
        do {
            packet = try decoder.decode(from: &buffer)
        } catch {
            throw .malformedPacket("\(error)")
        }
        guard let packet else { return nil }
        switch packet {
        case .publish(let publish):
            return .publish(
                qos: publish.qos, packetID: publish.packetID ?? 0,
                stamp: PayloadStamp.read(from: publish.payload, at: publish.payload.readerIndex))
        case .puback(let ack): return .acknowledgement(.puback, packetID: ack.packetID)
        case .pubrec(let ack): return .acknowledgement(.pubrec, packetID: ack.packetID)
        case .pubrel(let ack): return .acknowledgement(.pubrel, packetID: ack.packetID)
        case .pubcomp(let ack): return .acknowledgement(.pubcomp, packetID: ack.packetID)
        case .connect, .connack, .subscribe, .suback, .unsubscribe, .unsuback, .pingreq, .pingresp, .disconnect:
            return .control(packet)
        }
    }
}
