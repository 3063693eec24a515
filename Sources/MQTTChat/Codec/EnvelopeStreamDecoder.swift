import SwiftProtobuf

/// Why a byte stream of length-prefixed envelopes could not be decoded.
public enum EnvelopeFramingError: Error, Sendable, Hashable {
    /// The varint length prefix is longer than 10 bytes or overflows 64 bits.
    case malformedLengthPrefix
    /// A frame announces more bytes than the decoder accepts.
    case frameTooLarge(length: UInt64, limit: Int)
    /// A complete frame is not a valid protobuf `Envelope`.
    case invalidEnvelope
    /// An envelope could not be serialized.
    case encodingFailed
}

/// Splits a byte stream of varint-length-prefixed protobuf messages (SwiftProtobuf's `BinaryDelimited`
/// format) into envelopes, however the stream was cut: a frame may arrive in pieces (split) and one read
/// may contain several frames (coalesced). The design notes' TCP chat had to solve exactly this; MQTT
/// already frames messages, so the chat layer uses this only for files and streams (e.g. history export).
public struct EnvelopeStreamDecoder: Sendable {
    /// The largest accepted frame, in bytes.
    public let maxFrameLength: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// Accepts frames of up to `maxFrameLength` bytes.
    public init(maxFrameLength: Int = 1 << 20) {
        self.maxFrameLength = maxFrameLength
    }

    /// Bytes received but not yet part of a complete frame.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Appends `bytes` and returns every envelope completed by them, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(EnvelopeFramingError) -> [ProtoEnvelope] {
        buffer.append(contentsOf: bytes)
        var envelopes: [ProtoEnvelope] = []
        while let frame = try nextFrame() {
            do {
                envelopes.append(try ProtoEnvelope(serializedBytes: Array(frame)))
            } catch {
                throw .invalidEnvelope
            }
        }
        if readIndex > 0, readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        return envelopes
    }

    /// Encodes `envelope` as one frame: its length as a varint, then its bytes.
    public static func frame(_ envelope: ProtoEnvelope) throws(EnvelopeFramingError) -> [UInt8] {
        let body: [UInt8]
        do { body = try envelope.serializedBytes() } catch { throw .encodingFailed }
        return frame(serializedEnvelope: body)
    }

    /// Frames an envelope that is already serialized: its length as a varint, then `body`.
    public static func frame(serializedEnvelope body: [UInt8]) -> [UInt8] {
        var framed: [UInt8] = []
        framed.reserveCapacity(body.count + 5)
        var length = UInt64(body.count)
        repeat {
            let low = UInt8(length & 0x7F)
            length >>= 7
            framed.append(length == 0 ? low : low | 0x80)
        } while length != 0
        framed.append(contentsOf: body)
        return framed
    }

    /// The next complete frame's bytes, or `nil` if more bytes are needed.
    private mutating func nextFrame() throws(EnvelopeFramingError) -> ArraySlice<UInt8>? {
        var length: UInt64 = 0
        var shift: UInt64 = 0
        var index = readIndex
        while true {
            guard index < buffer.count else { return nil }
            let byte = buffer[index]
            index += 1
            if shift == 63, byte > 1 { throw .malformedLengthPrefix }
            length |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
            if shift > 63 { throw .malformedLengthPrefix }
        }
        guard length <= UInt64(maxFrameLength) else { throw .frameTooLarge(length: length, limit: maxFrameLength) }
        let end = index + Int(length)
        guard end <= buffer.count else { return nil }
        readIndex = end
        return buffer[index..<end]
    }
}
