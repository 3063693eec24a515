import Logging

/// One line of a configuration file, split into an option and its values.
struct ConfigLine {
    let source: String
    let number: Int
    let option: String?
    let rawValues: [String]
    /// The values with `#` kept: mosquitto has no inline comments, and a bridge `topic` pattern is often `a/#`.
    let valuesKeepingHash: [String]

    init(_ raw: Substring, source: String, number: Int) {
        self.source = source
        self.number = number
        self.valuesKeepingHash = Array(
            raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).dropFirst().map(String.init))
        let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        self.option = words.first
        self.rawValues = Array(words.dropFirst())
    }

    private var optionName: String { option ?? "" }

    /// The values, which must number within `range`.
    func values(_ range: ClosedRange<Int>) throws(BrokerConfigError) -> [String] {
        if rawValues.count < range.lowerBound {
            throw .missingValue(source: source, line: number, option: optionName)
        }
        if rawValues.count > range.upperBound {
            throw .extraValues(source: source, line: number, option: optionName)
        }
        return rawValues
    }

    /// The one value of an option that takes exactly one.
    func single() throws(BrokerConfigError) -> String {
        try values(1...1)[0]
    }

    func integer(_ value: String, in range: ClosedRange<Int>) throws(BrokerConfigError) -> Int {
        guard let parsed = Int(value), range.contains(parsed) else {
            throw invalid(value, expected: "an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return parsed
    }

    func bool(_ value: String) throws(BrokerConfigError) -> Bool {
        switch value {
        case "true": return true
        case "false": return false
        default: throw invalid(value, expected: "true or false")
        }
    }

    /// Maps mosquitto's `log_type` names onto swift-log levels.
    func logTypeLevel(_ value: String) throws(BrokerConfigError) -> Logger.Level {
        switch value {
        case "all", "debug": return .debug
        case "information", "subscribe", "unsubscribe", "websockets": return .info
        case "notice": return .notice
        case "warning": return .warning
        case "error": return .error
        case "none": return .critical
        default: throw invalid(value, expected: "a mosquitto log_type (debug, information, notice, warning, error, all, none)")
        }
    }

    func invalid(_ value: String, expected: String) -> BrokerConfigError {
        .invalidValue(source: source, line: number, option: optionName, value: value, expected: expected)
    }
}
