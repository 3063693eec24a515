/// Strict UTF-8 validation for MQTT strings (MQTT 3.1.1 section 1.5.3).
///
/// Accepts exactly the well-formed byte sequences of Unicode table 3-7: no overlong encodings, no surrogates
/// (U+D800...U+DFFF), nothing above U+10FFFF, no truncated sequences. Also reports U+0000, which MQTT forbids.
/// Written by hand (rather than `String(validating:)`) so that one pass finds both problems on every platform.
enum MQTTUTF8 {
    /// The outcome of validating a byte sequence.
    enum Verdict: Equatable {
        /// Well-formed UTF-8 without U+0000.
        case valid
        /// Well-formed so far, but contains U+0000.
        case containsNull
        /// Not well-formed UTF-8.
        case illFormed
    }

    /// Validates `bytes` as an MQTT UTF-8 string.
    static func validate(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        var sawNull = false
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            if lead < 0x80 {
                if lead == 0 { sawNull = true }
                index += 1
                continue
            }
            // The allowed range of the second byte depends on the lead byte; later bytes are always 80...BF.
            let sequenceLength: Int
            var secondLow: UInt8 = 0x80
            var secondHigh: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF:
                sequenceLength = 2
            case 0xE0:
                sequenceLength = 3
                secondLow = 0xA0  // below is overlong
            case 0xE1...0xEC, 0xEE...0xEF:
                sequenceLength = 3
            case 0xED:
                sequenceLength = 3
                secondHigh = 0x9F  // above are surrogates
            case 0xF0:
                sequenceLength = 4
                secondLow = 0x90  // below is overlong
            case 0xF1...0xF3:
                sequenceLength = 4
            case 0xF4:
                sequenceLength = 4
                secondHigh = 0x8F  // above is beyond U+10FFFF
            default:
                return .illFormed  // 80...C1 (continuation or overlong lead) and F5...FF
            }
            guard index + sequenceLength <= count else { return .illFormed }
            let second = bytes[index + 1]
            guard second >= secondLow, second <= secondHigh else { return .illFormed }
            var continuation = index + 2
            while continuation < index + sequenceLength {
                guard bytes[continuation] & 0xC0 == 0x80 else { return .illFormed }
                continuation += 1
            }
            index += sequenceLength
        }
        return sawNull ? .containsNull : .valid
    }
}
