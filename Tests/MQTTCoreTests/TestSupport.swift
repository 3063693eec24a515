import MQTTCore
import NIOCore
import Testing

/// Builders for hand-written wire bytes, so that test tables read like the spec's figures.
enum Wire {
    /// A whole packet: first byte, remaining length (computed), body.
    static func packet(_ firstByte: UInt8, _ body: [UInt8]) -> [UInt8] {
        [firstByte] + remainingLength(body.count) + body
    }

    /// The variable byte integer encoding of `value`, written out independently of the codec.
    static func remainingLength(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            var byte = UInt8(rest % 128)
            rest /= 128
            if rest > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while rest > 0
        return bytes
    }

    /// A length-prefixed UTF-8 string.
    static func string(_ text: String) -> [UInt8] { bytes(Array(text.utf8)) }

    /// Length-prefixed raw bytes (binary data, or deliberately broken UTF-8).
    static func bytes(_ raw: [UInt8]) -> [UInt8] { [UInt8(raw.count >> 8), UInt8(raw.count & 0xFF)] + raw }

    /// A two-byte big-endian integer.
    static func uint16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// A 3.1.1 CONNECT variable header ("MQTT", level 4) with the given flags and keepalive 60.
    static func connectHeader(flags: UInt8, name: String = "MQTT", level: UInt8 = 4) -> [UInt8] {
        string(name) + [level, flags] + uint16(60)
    }
}

extension ByteBuffer {
    /// A buffer holding `bytes`.
    init(bytes: [UInt8]) {
        self.init()
        writeBytes(bytes)
    }

    /// The readable bytes as an array.
    var bytes: [UInt8] { Array(readableBytesView) }
}

/// Encodes `packet` to an array of bytes.
func encoded(_ packet: MQTTPacket) throws -> [UInt8] {
    var buffer = ByteBuffer()
    try MQTTPacketEncoder.encode(packet, into: &buffer)
    return buffer.bytes
}

/// Decodes exactly one packet that fills `bytes` completely.
func decodedSingle(_ bytes: [UInt8], decoder: MQTTPacketDecoder = MQTTPacketDecoder()) throws -> MQTTPacket? {
    var decoder = decoder
    var buffer = ByteBuffer(bytes: bytes)
    let packet = try decoder.decode(from: &buffer)
    #expect(buffer.readableBytes == 0, "decoder must consume exactly the packet's bytes")
    return packet
}

/// Decodes every whole packet in `buffer`.
func decodeAll(_ buffer: inout ByteBuffer, decoder: inout MQTTPacketDecoder) throws -> [MQTTPacket] {
    var packets: [MQTTPacket] = []
    while let packet = try decoder.decode(from: &buffer) {
        packets.append(packet)
    }
    return packets
}

/// Runs `body` and returns the codec error it throws, or nil; any other error is recorded as an issue.
func codecError(_ body: () throws -> Void) -> MQTTCodecError? {
    do {
        try body()
        return nil
    } catch let error as MQTTCodecError {
        return error
    } catch {
        Issue.record("expected an MQTTCodecError, got \(error)")
        return nil
    }
}

/// A buffer holding the UTF-8 bytes of `text`.
func payload(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }
