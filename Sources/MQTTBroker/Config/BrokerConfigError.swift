/// Why a broker configuration file could not be used. Every case names the file and line.
public enum BrokerConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be read; `reason` is short: "no such file", "permission denied", "not UTF-8 text", …
    case unreadable(path: String, reason: String)
    /// The line names an option this broker does not know.
    case unknownOption(source: String, line: Int, option: String)
    /// The option (or, as in `log_dest syslog`, the option with that value) is a mosquitto option this broker
    /// does not implement; refusing it is safer than silently running without (for example) authentication.
    case unsupportedOption(source: String, line: Int, option: String)
    /// The option needs a value (or more values) than the line has.
    case missingValue(source: String, line: Int, option: String)
    /// The option has more values than it takes.
    case extraValues(source: String, line: Int, option: String)
    /// The file an option names (`password_file`, `acl_file`, `certfile`, `keyfile`, `cafile`) could not be read or
    /// parsed.
    case invalidFile(source: String, line: Int, option: String, reason: String)
    /// A value could not be parsed or is out of range.
    case invalidValue(source: String, line: Int, option: String, value: String, expected: String)
    /// A TLS option is outside a `listener` block or does not fit the other TLS options of its listener
    /// (for example `certfile` without `keyfile`, `require_certificate true` without `cafile`).
    case invalidTLSSettings(source: String, line: Int, option: String, reason: String)
    /// A listener option (`protocol`, `http_dir`) is outside a `listener` block or does not fit the other options of
    /// its listener (for example `http_dir` on a listener that is not `protocol websockets`).
    case invalidListenerSettings(source: String, line: Int, option: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .unknownOption(let source, let line, let option):
            return "\(source):\(line): unknown option '\(option)'"
        case .unsupportedOption(let source, let line, let option):
            return "mosquitto option not supported by mqttchat: \(option) (\(source):\(line))"
        case .missingValue(let source, let line, let option):
            return "\(source):\(line): option '\(option)' needs a value"
        case .extraValues(let source, let line, let option):
            return "\(source):\(line): option '\(option)' has too many values"
        case .invalidFile(let source, let line, let option, let reason):
            return "\(source):\(line): \(option): \(reason)"
        case .invalidValue(let source, let line, let option, let value, let expected):
            return "\(source):\(line): invalid value '\(value)' for '\(option)': expected \(expected)"
        case .invalidTLSSettings(let source, let line, let option, let reason):
            return "\(source):\(line): \(option) \(reason)"
        case .invalidListenerSettings(let source, let line, let option, let reason):
            return "\(source):\(line): \(option) \(reason)"
        }
    }
}
