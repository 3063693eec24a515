import MQTTCore
import NIOCore

extension DecoderOracle {
    /// Re-encodes a packet an MQTT 5 decoder accepted and checks that decoding the result gives the same packet and
    /// that re-encoding is stable. Unlike 3.1.1, the input bytes need not come back: MQTT 5 lets a sender leave out
    /// a success reason code and an empty property list, and the encoder always writes the shortest form.
    static func checkRoundTripV5(_ packet: MQTTDecodedPacket, originalBytes: [UInt8]) {
        let encodedBytes = encodeV5(packet)
        var decoder = DecodeOutcome.makeDecoder(
            maximumPacketSize: MQTTPacketDecoder.protocolMaximumPacketSize, version5: true)
        var reread = ByteBuffer(bytes: encodedBytes)
        let decodedAgain: MQTTDecodedPacket?
        do {
            decodedAgain = try decoder.decodePacketOrAuth(from: &reread)
        } catch {
            preconditionFailure("the MQTT 5 decoder rejects the encoder's output: \(error) for \(packet)")
        }
        precondition(decodedAgain == packet, "MQTT 5 round trip changed the packet: \(packet) -> \(String(describing: decodedAgain))")
        precondition(reread.readableBytes == 0, "MQTT 5 round trip left \(reread.readableBytes) bytes")
        precondition(encodeV5(packet) == encodedBytes, "the MQTT 5 encoder is not deterministic")
        precondition(encodedBytes.first == originalBytes.first, "the first byte changed in the MQTT 5 round trip")
    }

    /// The MQTT 5 encoding of `packet`; the encoder must accept whatever the decoder accepted.
    private static func encodeV5(_ packet: MQTTDecodedPacket) -> [UInt8] {
        var buffer = ByteBuffer()
        do {
            switch packet {
            case .packet(let packet): try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer)
            case .auth(let auth): try MQTTPacketEncoder.encode(auth, into: &buffer)
            }
        } catch {
            preconditionFailure("the MQTT 5 encoder rejects a packet the decoder accepted: \(error) for \(packet)")
        }
        return Array(buffer.readableBytesView)
    }
}
