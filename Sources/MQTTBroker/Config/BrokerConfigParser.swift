import Foundation
import Logging
import MQTTCore
import NIOCore

/// Reads broker configuration files in mosquitto's syntax: one `option value…` per line,
/// `#` starts a comment. The options this broker understands are documented in
/// `broker-config/mqttchat.conf`.
///
/// Departures from mosquitto, all deliberate:
/// - `listener PORT` without a bind address binds to 127.0.0.1 only (mosquitto binds every
///   interface); write `listener PORT 0.0.0.0` to listen everywhere.
/// - Options mosquitto knows but this broker does not implement are refused with an error instead of being
///   ignored, so a config never silently loses a security setting; the few whose absence is harmless are
///   accepted with a warning (``MosquittoOptionCatalog`` lists every option and why).
/// - `connect_timeout SECONDS`, `max_topic_levels N`, `threads N|auto` and `log_level LEVEL` exist only here, and so do
///   the flow-control keys `max_pending_output_bytes N`, `slow_consumer_timeout SECONDS` and
///   `backpressure_stall_ms MILLISECONDS`, the memory key `park_idle_connections_after_ms MILLISECONDS`, and
///   `poll_before_sleep_us MICROSECONDS`.
/// - `metrics_listener ADDRESS:PORT` (Prometheus metrics over HTTP, ``MetricsListenerLine``) exists only here.
/// - `allow_anonymous` defaults to true when every listener binds loopback only (127.0.0.1, ::1, localhost) and
///   to false otherwise; mosquitto 2 defaults to false everywhere. Setting it explicitly always wins.
/// - `max_connections` counts sockets across all listeners (mosquitto counts per listener).
/// - `certfile`, `keyfile`, `cafile`, `require_certificate`, `use_identity_as_username` and `tls_version`
///   must follow a `listener` line (mosquitto would apply them to its default listener); a TLS option without
///   `certfile` and `keyfile` in its listener is an error; `tls_version` takes `tlsv1.2` (the default) or `tlsv1.3`.
/// - `protocol mqtt|websockets` and `http_dir DIR` must follow a `listener` line too; `http_dir` on a listener
///   that is not `protocol websockets`, or naming no directory, is an error (mosquitto ignores the former and fails
///   at startup on the latter).
public enum BrokerConfigParser {
    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(BrokerConfigError) -> BrokerSettings {
        var state = ParseState()
        try state.consume(try ConfigFileReader.text(of: path), source: path, isMain: true)
        return try state.finish()
    }

    /// Parses configuration text; `source` names it in errors.
    public static func parse(_ text: String, source: String = "<config>") throws(BrokerConfigError) -> BrokerSettings {
        var state = ParseState()
        try state.consume(text, source: source, isMain: true)
        return try state.finish()
    }

    /// Everything gathered while reading the main file and the files of its `include_dir`.
    private struct ParseState {
        var settings = BrokerSettings()
        var listeners: [BrokerConfiguration.Listener] = []
        var logTypeLevel: Logger.Level?
        var anonymousSet = false
        var tlsDrafts: [Int: ListenerTLSDraft] = [:]  // by listener index
        var protocolDrafts: [Int: ListenerProtocolDraft] = [:]  // by listener index
        var persistenceLines = PersistenceConfigLines()
        var bridgeLines = BridgeConfigLines()

        mutating func consume(_ text: String, source: String, isMain: Bool) throws(BrokerConfigError) {
            for (index, rawLine) in ConfigText.lines(of: text).enumerated() {
                let line = ConfigLine(rawLine, source: source, number: index + 1)
                guard let option = line.option else { continue }
                anonymousSet = anonymousSet || option == "allow_anonymous"
                if ListenerTLSDraft.options.contains(option) {  // belongs to the listener above it
                    guard !listeners.isEmpty else {
                        throw .invalidTLSSettings(
                            source: source, line: line.number, option: option, reason: "must follow a listener line")
                    }
                    try tlsDrafts[listeners.count - 1, default: ListenerTLSDraft()].record(option, line)
                    continue
                }
                if ListenerProtocolDraft.options.contains(option) {  // belongs to the listener above it, as TLS
                    guard !listeners.isEmpty else {
                        throw .invalidListenerSettings(
                            source: source, line: line.number, option: option, reason: "must follow a listener line")
                    }
                    try protocolDrafts[listeners.count - 1, default: ListenerProtocolDraft()].record(option, line)
                    continue
                }
                if try persistenceLines.take(option, line) { continue }
                if try bridgeLines.take(option, line) { continue }
                if try MetricsListenerLine.take(option, line, into: &settings.configuration) { continue }
                if option == "include_dir" {
                    try include(line, isMain: isMain)
                    continue
                }
                try apply(option, line, to: &settings, listeners: &listeners, logTypeLevel: &logTypeLevel)
            }
        }

        /// `include_dir DIR`: every `*.conf` file in DIR in mosquitto's order; only from the main file, as there.
        private mutating func include(_ line: ConfigLine, isMain: Bool) throws(BrokerConfigError) {
            let directory = try line.single()
            guard isMain else {
                throw line.invalid(directory, expected: "include_dir only in the main configuration file")
            }
            for path in try ConfigFileReader.includedFiles(in: directory, line: line) {
                try consume(try ConfigFileReader.text(of: path), source: path, isMain: false)
            }
        }

        func finish() throws(BrokerConfigError) -> BrokerSettings {
            var settings = settings
            var listeners = listeners
            for (index, draft) in tlsDrafts.sorted(by: { $0.key < $1.key }) {
                listeners[index].tls = try draft.finish()
            }
            for (index, draft) in protocolDrafts.sorted(by: { $0.key < $1.key }) {
                try draft.apply(to: &listeners[index])
            }
            if !listeners.isEmpty {
                settings.configuration.listeners = listeners
            }
            if let logTypeLevel {
                settings.logLevel = logTypeLevel
            }
            settings.configuration.persistence = try persistenceLines.configuration()
            settings.configuration.bridges = try bridgeLines.configurations()
            if !anonymousSet {
                settings.configuration.allowAnonymous = settings.configuration.listeners.allSatisfy {
                    loopbackHosts.contains($0.host)
                }
            }
            return settings
        }
    }

    /// Bind addresses that only the local machine can reach.
    static let loopbackHosts: Set<String> = ["127.0.0.1", "::1", "localhost"]

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private static func apply(
        _ option: String,
        _ line: ConfigLine,
        to settings: inout BrokerSettings,
        listeners: inout [BrokerConfiguration.Listener],
        logTypeLevel: inout Logger.Level?
    ) throws(BrokerConfigError) {
        switch option {
        case "listener":
            let values = try line.values(1...2)
            let port = try line.integer(values[0], in: 0...65535)
            let host = values.count == 2 ? values[1] : "127.0.0.1"
            listeners.append(BrokerConfiguration.Listener(host: host, port: port))
        case "allow_anonymous":
            settings.configuration.allowAnonymous = try line.bool(line.single())
        case "password_file":
            let path = try line.single()
            do throws(PasswordFileError) {
                settings.configuration.authenticator = PasswordFileAuthenticator(file: try PasswordFile.load(path: path))
            } catch {
                throw .invalidFile(source: line.source, line: line.number, option: option, reason: error.description)
            }
        case "acl_file":
            let path = try line.single()
            do throws(AccessControlListError) {
                settings.configuration.accessControl = try AccessControlList.load(path: path)
            } catch {
                throw .invalidFile(source: line.source, line: line.number, option: option, reason: error.description)
            }
        case "max_connections":
            settings.configuration.maxConnections = try line.integer(line.single(), in: -1...Int(Int32.max))
        case "max_inflight_messages":
            settings.configuration.maxInflightMessages = try line.integer(line.single(), in: 0...65535)
        case "max_queued_messages":
            settings.configuration.maxQueuedMessages = try line.integer(line.single(), in: 0...Int(Int32.max))
        case "max_queued_bytes":
            settings.configuration.maxQueuedBytes = try line.integer(line.single(), in: 0...Int(Int32.max))
        case "max_pending_output_bytes":
            settings.configuration.maxPendingOutputBytes = try line.integer(line.single(), in: 0...Int(Int32.max))
        case "slow_consumer_timeout":
            let seconds = try line.integer(line.single(), in: 0...86_400)
            settings.configuration.slowConsumerTimeout = seconds == 0 ? nil : .seconds(Int64(seconds))
        case "backpressure_stall_ms":
            let milliseconds = try line.integer(line.single(), in: 0...3_600_000)
            settings.configuration.backpressureStallTimeout = milliseconds == 0 ? nil : .milliseconds(Int64(milliseconds))
        case "poll_before_sleep_us":
            settings.configuration.pollBeforeSleep = .microseconds(Int64(try line.integer(line.single(), in: 0...1_000)))
        case "park_idle_connections_after_ms":
            let milliseconds = try line.integer(line.single(), in: 0...86_400_000)
            settings.configuration.parkIdleConnectionsAfter = milliseconds == 0 ? nil : .milliseconds(Int64(milliseconds))
        case "max_packet_size":
            let size = try line.integer(line.single(), in: 0...MQTTPacketDecoder.protocolMaximumPacketSize + 5)
            settings.configuration.maxPacketSize = size == 0 ? MQTTPacketDecoder.protocolMaximumPacketSize : size
        case "message_size_limit":
            settings.configuration.messageSizeLimit = try line.integer(
                line.single(), in: 0...MQTTPacketDecoder.protocolMaximumPacketSize)
        case "max_qos":
            let value = try line.integer(line.single(), in: 0...2)
            settings.configuration.maxQoS = QoS(rawValue: UInt8(value)) ?? .exactlyOnce
        case "retain_available":
            settings.configuration.retainAvailable = try line.bool(line.single())
        case "sys_interval":
            let seconds = try line.integer(line.single(), in: 0...86_400)
            settings.configuration.sysInterval = seconds == 0 ? nil : .seconds(Int64(seconds))
        case "max_keepalive":
            settings.configuration.maxKeepalive = UInt16(try line.integer(line.single(), in: 0...65535))
        case "persistent_client_expiration":
            settings.configuration.persistentClientExpiration = try PersistentClientExpiration.seconds(line.single(), line: line)
        case "allow_zero_length_clientid":
            settings.configuration.allowZeroLengthClientID = try line.bool(line.single())
        case "max_topic_alias":
            settings.configuration.maxTopicAlias = UInt16(try line.integer(line.single(), in: 0...65535))
        case "threads":
            let value = try line.single()
            settings.configuration.eventLoopCount =
                value == "auto" ? AvailableCores.count : try line.integer(value, in: 1...256)
        case "socket_engine":
            let value = try line.single()
            guard let engine = SocketEngine(rawValue: value) else { throw line.invalid(value, expected: "auto or nio") }
            settings.configuration.socketEngine = engine
        case "max_topic_levels":
            settings.configuration.maxTopicLevels = try line.integer(line.single(), in: 1...65535)
        case "connect_timeout":
            let seconds = try line.integer(line.single(), in: 1...3600)
            settings.configuration.connectTimeout = .seconds(Int64(seconds))
        case "queue_qos0_messages":
            if try line.bool(line.single()) {
                throw .unsupportedOption(source: line.source, line: line.number, option: "queue_qos0_messages true")
            }
        case "log_dest":
            let values = try line.values(1...2)
            switch values[0] {
            case "stdout": settings.logDestination = .stdout
            case "stderr": settings.logDestination = .stderr
            case "none": settings.logDestination = .none
            case "file":
                guard values.count == 2 else {
                    throw .missingValue(source: line.source, line: line.number, option: "log_dest file")
                }
                settings.logDestination = .file(path: values[1])
            case "syslog", "topic", "dlt":
                throw .unsupportedOption(source: line.source, line: line.number, option: "log_dest \(values[0])")
            default:
                throw .invalidValue(
                    source: line.source, line: line.number, option: option, value: values[0],
                    expected: "stdout, stderr, file PATH or none")
            }
        case "autosave_on_changes":
            // false (mosquitto's default) is how snapshots work here: every autosave_interval seconds. true would
            // ask for snapshots after N changes, which would silently come less often than asked.
            if try line.bool(line.single()) {
                throw .unsupportedOption(source: line.source, line: line.number, option: "autosave_on_changes true")
            }
        case "log_type":
            let level = try line.logTypeLevel(line.single())
            logTypeLevel = mostVerbose(logTypeLevel, level)
        case "log_level":
            let value = try line.single()
            guard let level = Logger.Level(rawValue: value) else {
                throw .invalidValue(
                    source: line.source, line: line.number, option: option, value: value,
                    expected: "trace, debug, info, notice, warning, error or critical")
            }
            settings.logLevel = level
        default:
            switch MosquittoOptionCatalog.treatment(of: option) {
            case .ignored(let reason):
                settings.warnings.append("\(line.source):\(line.number): ignoring mosquitto option '\(option)': \(reason)")
            case .unsupported:
                throw .unsupportedOption(source: line.source, line: line.number, option: option)
            case .unknown:
                throw .unknownOption(source: line.source, line: line.number, option: option)
            }
        }
    }

    private static func mostVerbose(_ lhs: Logger.Level?, _ rhs: Logger.Level) -> Logger.Level {
        guard let lhs else { return rhs }
        return min(lhs, rhs)
    }
}
