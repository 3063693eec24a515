import Foundation
import MQTTClient

/// Why a `-F` format string was refused; the texts are mosquitto_sub's.
struct MosquittoFormatError: Error, Sendable, Equatable {
    /// What is wrong, for a human.
    let message: String
}

/// A parsed `subscribe -F` format string with mosquitto_sub's semantics (see `man mosquitto_sub`, OUTPUT FORMAT):
/// `%` message parameters with optional `-`/`0` flags, width and `.max` width; `@` strftime sequences (`@N`
/// nanoseconds, `@@`); `\` escapes. MQTT 5 parameters (`%A %C %D %E %F %P %R %S`) print nothing at 3.1.1.
/// Parsed once, before connecting, so a bad format fails at once with exit 64 as mosquitto_sub does.
struct MosquittoFormat: Sendable {
    private enum Piece: Sendable {
        case literal([UInt8])
        case parameter(Character, Spec)
        case strftime(Character)
        case nanoseconds
    }

    private struct Spec: Sendable {
        var leftAlign = false
        var zeroPad = false
        var width = 0
        var maxWidth: Int?
    }

    private let pieces: [Piece]
    private let pretty: Bool

    /// Parameters mosquitto_sub knows; the v5-only ones render empty here.
    private static let parameters: Set<Character> = ["%", "A", "C", "D", "E", "F", "I", "j", "J", "l", "m", "P", "p",
                                                     "q", "R", "r", "S", "t", "U", "x", "X"]
    /// Parameters that honour the `0` flag (mosquitto pads only numbers and hex with zeros).
    private static let zeroPaddable: Set<Character> = ["A", "E", "F", "l", "m", "S", "x", "X"]
    private static let escapes: [Character: UInt8] = ["\\": 0x5C, "0": 0, "a": 7, "e": 0x1B, "n": 0x0A, "r": 0x0D,
                                                      "t": 0x09, "v": 0x0B]

    /// Parses `format`; `pretty` makes `%j`/`%J` print indented JSON (`--pretty`).
    init(_ format: String, pretty: Bool = false) throws(MosquittoFormatError) {
        self.pretty = pretty
        var pieces: [Piece] = []
        var literal: [UInt8] = []
        var characters = Array(format)[...]
        func flush() {
            if !literal.isEmpty { pieces.append(.literal(literal)) }
            literal = []
        }
        while let character = characters.popFirst() {
            switch character {
            case "%":
                var spec = Spec()
                while let flag = characters.first, flag == "-" || flag == "0" {
                    if flag == "-" { spec.leftAlign = true } else { spec.zeroPad = true }
                    characters.removeFirst()
                }
                spec.width = Self.number(&characters) ?? 0
                if characters.first == "." {
                    characters.removeFirst()
                    spec.maxWidth = Self.number(&characters) ?? 0
                }
                guard let parameter = characters.popFirst() else {
                    throw MosquittoFormatError(message: "Incomplete format specifier.")
                }
                guard Self.parameters.contains(parameter) else {
                    throw MosquittoFormatError(message: "Invalid format specifier '\(parameter)'.")
                }
                if parameter == "%" {
                    literal.append(0x25)
                } else {
                    flush()
                    pieces.append(.parameter(parameter, spec))
                }
            case "@":
                guard let next = characters.popFirst() else {
                    throw MosquittoFormatError(message: "Incomplete format specifier.")
                }
                if next == "@" {
                    literal.append(0x40)
                } else {
                    flush()
                    pieces.append(next == "N" ? .nanoseconds : .strftime(next))
                }
            case "\\":
                guard let next = characters.popFirst() else {
                    throw MosquittoFormatError(message: "Incomplete escape specifier.")
                }
                guard let byte = Self.escapes[next] else {
                    throw MosquittoFormatError(message: "Invalid escape specifier '\(next)'.")
                }
                literal.append(byte)
            default:
                literal += Array(String(character).utf8)
            }
        }
        flush()
        self.pieces = pieces
    }

    private static func number(_ characters: inout ArraySlice<Character>) -> Int? {
        var digits = ""
        while let next = characters.first, next.isASCII, next.isNumber {
            digits.append(next)
            characters.removeFirst()
        }
        return Int(digits.prefix(6))  // a six-digit cap keeps absurd widths from allocating gigabytes
    }

    /// The bytes `message` prints as, received at `time` (wall clock); nil when `%J` finds no JSON payload.
    func render(_ message: MQTTMessage, at time: timespec) -> [UInt8]? {
        var output: [UInt8] = []
        for piece in pieces {
            switch piece {
            case .literal(let bytes):
                output += bytes
            case .nanoseconds:
                output += Array(String(format: "%09ld", time.tv_nsec).utf8)
            case .strftime(let character):
                output += Array(Self.strftime("%" + String(character), time).utf8)
            case .parameter(let parameter, let spec):
                if parameter == "j" || parameter == "J" {
                    guard let json = json(message, time, rawPayload: parameter == "J") else { return nil }
                    output += json
                } else {
                    output += Self.pad(value(parameter, message, time), spec, zeroPaddable: Self.zeroPaddable.contains(parameter))
                }
            }
        }
        return output
    }

    private func value(_ parameter: Character, _ message: MQTTMessage, _ time: timespec) -> [UInt8] {
        switch parameter {
        case "t": Array(message.topic.utf8)
        case "p": message.payload
        case "q": Array(String(message.qos.rawValue).utf8)
        case "r": message.retain ? [0x31] : [0x30]
        case "m": Array(String(message.messageID).utf8)
        case "l": Array(String(message.payload.count).utf8)
        case "x": Array(message.payload.map { String(format: "%02x", $0) }.joined().utf8)
        case "X": Array(message.payload.map { String(format: "%02X", $0) }.joined().utf8)
        case "I": Array(Self.strftime("%Y-%m-%dT%H:%M:%S%z", time).utf8)
        case "U": Array(String(format: "%ld.%09ld", time.tv_sec, time.tv_nsec).utf8)
        default: []  // MQTT 5 properties: a 3.1.1 message has none
        }
    }

    /// mosquitto's field width rules: minimum width (blank or zero padding, right-aligned unless `-`), and a
    /// maximum width that cuts the value.
    private static func pad(_ value: [UInt8], _ spec: Spec, zeroPaddable: Bool) -> [UInt8] {
        var value = value
        if let maxWidth = spec.maxWidth, value.count > maxWidth { value = Array(value.prefix(maxWidth)) }
        guard value.count < spec.width else { return value }
        let fill = [UInt8](repeating: spec.zeroPad && zeroPaddable && !spec.leftAlign ? 0x30 : 0x20,
                           count: spec.width - value.count)
        return spec.leftAlign ? value + fill : fill + value
    }

    /// `%j` / `%J`: mosquitto_sub's JSON object (its `tst` spelling included).
    private func json(_ message: MQTTMessage, _ time: timespec, rawPayload: Bool) -> [UInt8]? {
        let stamp = Self.strftime("%Y-%m-%dT%H:%M:%S", time) + String(format: ".%06ldZ", time.tv_nsec / 1000)
            + Self.strftime("%z", time)
        var payload: [UInt8]
        if message.payload.isEmpty {
            payload = Array("null".utf8)
        } else if rawPayload {
            guard (try? JSONSerialization.jsonObject(with: Data(message.payload), options: .fragmentsAllowed)) != nil else {
                Console.error("Error: Message payload is not valid JSON on topic \(message.topic)")
                return nil
            }
            payload = message.payload
        } else {
            payload = Self.quoted(message.payload)
        }
        var fields: [(String, [UInt8])] = [
            ("tst", Self.quoted(Array(stamp.utf8))), ("topic", Self.quoted(Array(message.topic.utf8))),
            ("qos", Array(String(message.qos.rawValue).utf8)), ("retain", message.retain ? [0x31] : [0x30]),
            ("payloadlen", Array(String(message.payload.count).utf8)),
        ]
        if message.qos != .atMostOnce { fields.append(("mid", Array(String(message.messageID).utf8))) }
        fields.append(("payload", payload))
        // cJSON's layouts: minimised, or (--pretty) one tab-indented "key":<tab>value per line.
        let separator: [UInt8] = pretty ? Array(",\n\t".utf8) : [0x2C]
        var output: [UInt8] = pretty ? Array("{\n\t".utf8) : [0x7B]
        for (index, field) in fields.enumerated() {
            if index > 0 { output += separator }
            output += Self.quoted(Array(field.0.utf8)) + (pretty ? [0x3A, 0x09] : [0x3A]) + field.1
        }
        output += pretty ? Array("\n}".utf8) : [0x7D]
        return output
    }

    /// A JSON string literal as cJSON writes it: `"` and `\` escaped, control bytes as `\b \f \n \r \t` or `\u00XX`.
    private static func quoted(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [0x22]
        for byte in bytes {
            switch byte {
            case 0x22: output += [0x5C, 0x22]
            case 0x5C: output += [0x5C, 0x5C]
            case 0x08: output += [0x5C, 0x62]
            case 0x0C: output += [0x5C, 0x66]
            case 0x0A: output += [0x5C, 0x6E]
            case 0x0D: output += [0x5C, 0x72]
            case 0x09: output += [0x5C, 0x74]
            case 0..<0x20: output += Array(String(format: "\\u%04x", byte).utf8)
            default: output.append(byte)
            }
        }
        output.append(0x22)
        return output
    }

    /// strftime(3) in the local time zone, as mosquitto_sub uses it.
    private static func strftime(_ format: String, _ time: timespec) -> String {
        var seconds = time.tv_sec
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "" }
        var buffer = [CChar](repeating: 0, count: 256)
        let count = Foundation.strftime(&buffer, buffer.count, format, &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The wall-clock time now, with nanoseconds.
    static func now() -> timespec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return time
    }
}
