import Foundation
import MQTTClient

/// Why a `-F` format string was refused; the texts are mosquitto_sub's.
struct MosquittoFormatError: Error, Sendable, Equatable {
    /// What is wrong, for a human.
    let message: String
}

/// A parsed `subscribe -F` format string with mosquitto_sub's semantics (see `man mosquitto_sub`, OUTPUT FORMAT):
/// `%` message parameters with optional `-`/`0` flags, width and `.max` width; `@` strftime sequences (`@N`
/// nanoseconds, `@@`); `\` escapes. MQTT 5 parameters (`%A %C %D %E %F %P %R %S`) print the message's properties
/// as mosquitto_sub does, and a blank field (or nothing) when it has none, as every 3.1.1 message.
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

    /// Parameters mosquitto_sub knows.
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
                    switch field(parameter, message, time) {
                    case .value(let bytes):
                        output += Self.pad(bytes, spec, zeroPaddable: Self.zeroPaddable.contains(parameter))
                    case .raw(let bytes):
                        output += bytes
                    case .blank:  // mosquitto's formatted_print_blank: the width in pad characters
                        output += [UInt8](repeating: spec.zeroPad ? 0x30 : 0x20, count: spec.width)
                    }
                }
            }
        }
        return output
    }

    /// What one parameter prints: a value that honours width and flags, bytes printed as they are, or a blank field.
    private enum Field {
        case value([UInt8])
        case raw([UInt8])
        case blank
    }

    private func field(_ parameter: Character, _ message: MQTTMessage, _ time: timespec) -> Field {
        let properties = message.properties
        func number<T: BinaryInteger>(_ value: T?) -> Field { value.map { .value(Array(String($0).utf8)) } ?? .blank }
        switch parameter {
        case "t": return .value(Array(message.topic.utf8))
        case "p": return .value(message.payload)
        case "q": return .raw(Array(String(message.qos.rawValue).utf8))
        case "r": return .raw(message.retain ? [0x31] : [0x30])
        case "m": return .value(Array(String(message.messageID).utf8))
        case "l": return .value(Array(String(message.payload.count).utf8))
        case "x": return .value(Array(message.payload.map { String(format: "%02x", $0) }.joined().utf8))
        case "X": return .value(Array(message.payload.map { String(format: "%02X", $0) }.joined().utf8))
        case "I": return .value(Array(Self.strftime("%Y-%m-%dT%H:%M:%S%z", time).utf8))
        case "U": return .raw(Array(String(format: "%ld.%09ld", time.tv_sec, time.tv_nsec).utf8))
        // MQTT 5 properties, printed as mosquitto_sub 2.0.11 prints them.
        case "C": return properties.contentType.map { .value(Array($0.utf8)) } ?? .blank
        case "D": return .raw(properties.correlationData ?? [])
        case "E": return number(properties.messageExpiryInterval)
        case "F": return number(properties.payloadFormat?.rawValue)
        case "P":
            return .raw(Array(properties.userProperties.map { "\($0.name):\($0.value)" }.joined(separator: " ").utf8))
        case "R": return properties.responseTopic.map { .value(Array($0.utf8)) } ?? .raw([])
        case "S": return number(message.subscriptionIdentifiers.first)
        default: return .blank  // %A: libmosquitto resolves topic aliases, so no message carries one here
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
        if let properties = jsonProperties(message) { fields.append(("properties", properties)) }
        fields.append(("payload", payload))
        // cJSON's layouts: minimised, or (--pretty) one tab-indented "key":<tab>value per line.
        return jsonObject(fields, depth: 1)
    }

    /// mosquitto_sub 2.0.11's `"properties"` object (nil when the message has none): subscription identifiers first,
    /// then the rest in the order a mosquitto broker forwards what `MQTTClient` sends, message expiry last; user
    /// properties as one object of name/value pairs. (The object follows the packet's order, which the client does
    /// not keep: from other publishers or brokers the keys may come in another order than mosquitto_sub's.)
    private func jsonProperties(_ message: MQTTMessage) -> [UInt8]? {
        let properties = message.properties
        guard !properties.isEmpty || !message.subscriptionIdentifiers.isEmpty else { return nil }
        var fields: [(String, [UInt8])] = message.subscriptionIdentifiers.map {
            ("subscription-identifier", Array(String($0).utf8))
        }
        if let format = properties.payloadFormat {
            fields.append(("payload-format-indicator", Array(String(format.rawValue).utf8)))
        }
        if let type = properties.contentType { fields.append(("content-type", Self.quoted(Array(type.utf8)))) }
        if let topic = properties.responseTopic { fields.append(("response-topic", Self.quoted(Array(topic.utf8)))) }
        if let data = properties.correlationData {  // cJSON_CreateString: the bytes up to the first NUL
            fields.append(("correlation-data", Self.quoted(Array(data.prefix { $0 != 0 }))))
        }
        if !properties.userProperties.isEmpty {
            let pairs = properties.userProperties.map { (($0.name), Self.quoted(Array($0.value.utf8))) }
            fields.append(("user-properties", jsonObject(pairs, depth: 3)))
        }
        if let expiry = properties.messageExpiryInterval {
            fields.append(("message-expiry-interval", Array(String(expiry).utf8)))
        }
        return jsonObject(fields, depth: 2)
    }

    /// A JSON object as cJSON prints it: minimised, or (`--pretty`) tab-indented `"key":<tab>value` lines at `depth`.
    private func jsonObject(_ fields: [(String, [UInt8])], depth: Int) -> [UInt8] {
        let indent = [UInt8](repeating: 0x09, count: depth)
        let separator: [UInt8] = pretty ? [0x2C, 0x0A] + indent : [0x2C]
        var output: [UInt8] = pretty ? [0x7B, 0x0A] + indent : [0x7B]
        for (index, field) in fields.enumerated() {
            if index > 0 { output += separator }
            output += Self.quoted(Array(field.0.utf8)) + (pretty ? [0x3A, 0x09] : [0x3A]) + field.1
        }
        output += pretty ? [0x0A] + indent.dropLast() + [0x7D] : [0x7D]
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
