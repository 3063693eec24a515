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
public struct InboundFrameScanner: Sendable {
    private var decoder = MQTTPacketDecoder()
    private let path: LoadGenConfig.DecodePath

    /// Creates a scanner.
    public init(path: LoadGenConfig.DecodePath = .scan) {
        self.path = path
    }

    /// Reads the next whole packet from the front of `buffer`; nil (buffer unchanged) when it is incomplete.
    public mutating func next(from buffer: inout ByteBuffer) throws(LoadGenError) -> InboundFrame? {
        switch path {
        case .full: return try decodeFully(from: &buffer)
        case .scan: return try scan(from: &buffer)
        }
    }

    private mutating func scan(from buffer: inout ByteBuffer) throws(LoadGenError) -> InboundFrame? {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self) else { return nil }
        var remaining = 0
        var shift = 0
        var index = start + 1
        while true {
            guard let byte = buffer.getInteger(at: index, as: UInt8.self) else { return nil }
            remaining |= Int(byte & 0x7F) << shift
            index += 1
            if byte & 0x80 == 0 { break }
            shift += 7
            guard shift < 28 else { throw .malformedPacket("remaining length longer than 4 bytes") }
        }
        let bodyStart = index
        guard buffer.readableBytes >= bodyStart - start + remaining else { return nil }
        switch first >> 4 {
        case PacketType.publish.rawValue:
            guard let qos = QoS(rawValue: (first >> 1) & 0b11),
                let topicLength = buffer.getInteger(at: bodyStart, as: UInt16.self)
            else { throw .malformedPacket("PUBLISH with QoS 3 or without topic") }
            var payloadStart = bodyStart + 2 + Int(topicLength)
            var packetID: UInt16 = 0
            if qos != .atMostOnce {
                guard let id = buffer.getInteger(at: payloadStart, as: UInt16.self) else {
                    throw .malformedPacket("PUBLISH without packet identifier")
                }
                packetID = id
                payloadStart += 2
            }
            let payloadLength = bodyStart + remaining - payloadStart
            guard payloadLength >= 0 else { throw .malformedPacket("PUBLISH topic longer than the packet") }
            let stamp = payloadLength >= PayloadStamp.byteCount ? PayloadStamp.read(from: buffer, at: payloadStart) : nil
            buffer.moveReaderIndex(to: bodyStart + remaining)
            return .publish(qos: qos, packetID: packetID, stamp: stamp)
        case PacketType.puback.rawValue, PacketType.pubrec.rawValue, PacketType.pubrel.rawValue,
            PacketType.pubcomp.rawValue:
            guard remaining == 2, let type = PacketType(rawValue: first >> 4),
                let packetID = buffer.getInteger(at: bodyStart, as: UInt16.self)
            else { throw .malformedPacket("acknowledgement with remaining length \(remaining)") }
            buffer.moveReaderIndex(to: bodyStart + remaining)
            return .acknowledgement(type, packetID: packetID)
        default:
            return try decodeFully(from: &buffer)
        }
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
