import MQTTCore
import NIOCore

/// The checks the fuzzer runs on every input, once with the broker's 3.1.1 decoder and once with an MQTT 5 one: the
/// decoder must not crash, must agree with itself whether the bytes
/// arrive at once or one at a time, must respect a small maximum packet size, and every packet it accepts must
/// survive an encode/decode round trip unchanged.
///
/// Violations stop the process with `precondition`: this is a test harness, and a crash is what libFuzzer records.
enum DecoderOracle {
    /// A small maximum remaining length, so that the "too large" path is exercised by short inputs.
    static let smallMaximumPacketSize = 64

    /// Runs every check on `bytes`, with a 3.1.1 decoder (the broker's) and with an MQTT 5 one.
    static func check(_ bytes: [UInt8]) {
        check(bytes, version5: false)
        check(bytes, version5: true)
    }

    /// Runs every check on `bytes` with one kind of decoder.
    private static func check(_ bytes: [UInt8], version5: Bool) {
        let whole = DecodeOutcome.decodingAll(
            bytes, maximumPacketSize: MQTTPacketDecoder.protocolMaximumPacketSize, version5: version5)
        let trickled = DecodeOutcome.decodingByteByByte(bytes, version5: version5)
        precondition(
            trickled == whole,
            "byte-by-byte decoding disagrees with whole-buffer decoding: \(trickled) vs \(whole)")

        let small = DecodeOutcome.decodingAll(bytes, maximumPacketSize: smallMaximumPacketSize, version5: version5)
        checkSmallMaximum(small, against: whole)

        for (packet, wireBytes) in zip(whole.packets, whole.packetBytes) {
            if version5 {
                checkRoundTripV5(packet, originalBytes: wireBytes)
            } else if case .packet(let packet) = packet {
                checkRoundTrip(packet, originalBytes: wireBytes)
            } else {
                preconditionFailure("a 3.1.1 decoder produced \(packet)")
            }
        }
        checkTopicMatching(whole.packets.compactMap { if case .packet(let packet) = $0 { packet } else { nil } })
    }

    /// Runs ``MQTTTopic`` over the topic names and filters the fuzzer got past the decoder, with properties that
    /// hold for every valid name `t` and filter `f`: `t` is a valid filter matching itself, `#` matches `t` unless
    /// it starts with `$` (MQTT-4.7.2-1), and a filter without wildcards matches exactly the equal topic.
    private static func checkTopicMatching(_ packets: [MQTTPacket]) {
        var names: [String] = []
        var filters: [String] = []
        for packet in packets {
            switch packet {
            case .publish(let publish):
                if !publish.topic.isEmpty { names.append(publish.topic) }  // empty: an MQTT 5 Topic Alias stands for it
            case .connect(let connect): if let will = connect.will { names.append(will.topic) }
            case .subscribe(let subscribe): filters += subscribe.subscriptions.map(\.topicFilter)
            case .unsubscribe(let unsubscribe): filters += unsubscribe.topicFilters
            case .connack, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .pingreq, .pingresp, .disconnect:
                continue
            }
        }
        for name in names {
            do {
                try MQTTTopic.validateFilter(name)
            } catch {
                preconditionFailure("the valid topic name \(name.debugDescription) is not a valid filter: \(error)")
            }
            precondition(MQTTTopic.matches(filter: name, topic: name), "\(name.debugDescription) does not match itself")
            precondition(
                MQTTTopic.matches(filter: "#", topic: name) == !MQTTTopic.startsWithDollar(name),
                "'#' against \(name.debugDescription)")
            for filter in filters {
                let matched = MQTTTopic.matches(filter: filter, topic: name)
                if !filter.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
                    precondition(matched == filter.utf8.elementsEqual(name.utf8), "\(filter.debugDescription) vs \(name.debugDescription)")
                }
            }
        }
    }

    /// With a small maximum the decoder must produce the same packets up to the first one that is too large, and
    /// then fail with ``MQTTCodecError/packetTooLarge(size:maximum:)``; otherwise exactly what it produces unlimited.
    private static func checkSmallMaximum(_ small: DecodeOutcome, against whole: DecodeOutcome) {
        precondition(small.packets.count <= whole.packets.count, "a smaller maximum decoded more packets")
        precondition(
            Array(whole.packets.prefix(small.packets.count)) == small.packets,
            "a smaller maximum decoded different packets")
        if case .packetTooLarge(let size, let maximum)? = small.error {
            precondition(maximum == smallMaximumPacketSize && size > maximum, "packetTooLarge(\(size), \(maximum))")
            return
        }
        precondition(small == whole, "a smaller maximum changed the outcome without packetTooLarge: \(small) vs \(whole)")
    }

    /// Re-encodes a decoded packet and checks that decoding the result gives the same packet, that re-encoding is
    /// stable, and that the encoder reproduces the input bytes except for a non-minimal remaining length encoding.
    private static func checkRoundTrip(_ packet: MQTTPacket, originalBytes: [UInt8]) {
        var encoded = ByteBuffer()
        do {
            try MQTTPacketEncoder.encode(packet, into: &encoded)
        } catch {
            preconditionFailure("the encoder rejects a packet the decoder accepted: \(error) for \(packet)")
        }
        let encodedBytes = Array(encoded.readableBytesView)

        var decoder = MQTTPacketDecoder()
        var reread = encoded
        let decodedAgain: MQTTPacket?
        do {
            decodedAgain = try decoder.decode(from: &reread)
        } catch {
            preconditionFailure("the decoder rejects the encoder's output: \(error) for \(packet)")
        }
        precondition(decodedAgain == packet, "round trip changed the packet: \(packet) -> \(String(describing: decodedAgain))")
        precondition(reread.readableBytes == 0, "round trip left \(reread.readableBytes) bytes")

        var encodedAgain = ByteBuffer()
        do {
            try MQTTPacketEncoder.encode(packet, into: &encodedAgain)
        } catch {
            preconditionFailure("the encoder is not deterministic: \(error)")
        }
        precondition(Array(encodedAgain.readableBytesView) == encodedBytes, "the encoder is not deterministic")

        precondition(encodedBytes.first == originalBytes.first, "the first byte changed in the round trip: \(encodedBytes) vs \(originalBytes)")
        precondition(
            WirePacket.body(of: encodedBytes) == WirePacket.body(of: originalBytes),
            "the packet body changed in the round trip: \(encodedBytes) vs \(originalBytes)")
    }
}

/// What decoding a whole input produced: the packets, their wire bytes, and the error that stopped it, if any.
struct DecodeOutcome: Equatable, CustomStringConvertible {
    var packets: [MQTTDecodedPacket] = []
    var packetBytes: [[UInt8]] = []
    var error: MQTTCodecError?
    /// How many input bytes the decoded packets covered.
    var consumed = 0

    var description: String { "\(packets.count) packets, \(consumed) bytes, error \(String(describing: error))" }

    /// Decodes from one buffer holding all of `bytes` until the decoder needs more or throws.
    static func decodingAll(_ bytes: [UInt8], maximumPacketSize: Int, version5: Bool) -> DecodeOutcome {
        var decoder = makeDecoder(maximumPacketSize: maximumPacketSize, version5: version5)
        var buffer = ByteBuffer(bytes: bytes)
        var outcome = DecodeOutcome()
        outcome.drain(&buffer, with: &decoder)
        return outcome
    }

    /// The broker's decoder (3.1.1, refusing level 5), or one on an MQTT 5 connection.
    static func makeDecoder(maximumPacketSize: Int, version5: Bool) -> MQTTPacketDecoder {
        var decoder = MQTTPacketDecoder(maximumPacketSize: maximumPacketSize, acceptsVersion5: version5)
        if version5 { decoder.protocolVersion = .v5 }
        return decoder
    }

    /// Feeds `bytes` one at a time into a cumulation buffer, decoding after each byte, like a slow socket.
    static func decodingByteByByte(_ bytes: [UInt8], version5: Bool) -> DecodeOutcome {
        var decoder = makeDecoder(maximumPacketSize: MQTTPacketDecoder.protocolMaximumPacketSize, version5: version5)
        var buffer = ByteBuffer()
        var outcome = DecodeOutcome()
        for byte in bytes {
            buffer.writeInteger(byte)
            outcome.drain(&buffer, with: &decoder)
            if outcome.error != nil { break }
            buffer.discardReadBytes()
        }
        return outcome
    }

    /// Decodes packets from `buffer` until it is exhausted or the decoder throws.
    private mutating func drain(_ buffer: inout ByteBuffer, with decoder: inout MQTTPacketDecoder) {
        while true {
            let start = buffer.readerIndex
            let before = buffer  // ByteBuffer getters refuse indices before the reader index
            let packet: MQTTDecodedPacket?
            do {
                // Only an MQTT 5 decoder knows AUTH; the 3.1.1 one goes through the broker's entry point.
                if decoder.acceptsVersion5 {
                    packet = try decoder.decodePacketOrAuth(from: &buffer)
                } else {
                    packet = try decoder.decode(from: &buffer).map(MQTTDecodedPacket.packet)
                }
            } catch {
                precondition(buffer.readerIndex == start, "a failed decode moved the reader index")
                self.error = error
                return
            }
            guard let packet else {
                precondition(buffer.readerIndex == start, "an incomplete decode moved the reader index")
                return
            }
            let length = buffer.readerIndex - start
            precondition(length >= 2, "a packet of \(length) bytes")
            packets.append(packet)
            packetBytes.append(before.getBytes(at: start, length: length) ?? [])
            consumed += length
        }
    }

    static func == (lhs: DecodeOutcome, rhs: DecodeOutcome) -> Bool {
        lhs.packets == rhs.packets && lhs.error == rhs.error && lhs.consumed == rhs.consumed
    }
}

/// Splits wire bytes independently of the codec under test.
enum WirePacket {
    /// The bytes after the fixed header (first byte plus remaining length), or nil if there is no whole header.
    static func body(of packet: [UInt8]) -> ArraySlice<UInt8>? {
        var index = 1
        while index < packet.count, index <= 4 {
            if packet[index] & 0x80 == 0 { return packet[(index + 1)...] }
            index += 1
        }
        return nil
    }
}

extension ByteBuffer {
    /// A buffer holding `bytes`.
    init(bytes: [UInt8]) {
        self.init()
        writeBytes(bytes)
    }
}
