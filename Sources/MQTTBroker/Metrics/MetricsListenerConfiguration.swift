extension BrokerConfiguration {
    /// Where the broker serves its Prometheus metrics (`GET /metrics` over plain HTTP): `metrics_listener
    /// ADDRESS:PORT` in the config file. Off unless configured; see ``BrokerConfiguration/metricsListener``.
    public struct MetricsListener: Sendable, Hashable {
        /// The address to bind, as for an MQTT listener (`127.0.0.1`, `0.0.0.0`, `::1`, a host name).
        public var host: String
        /// The TCP port; 0 binds an ephemeral port (read it back from ``MQTTBrokerServer/metricsAddress``).
        public var port: Int

        /// Creates a metrics listener description.
        public init(host: String = "127.0.0.1", port: Int = 9090) {
            self.host = host
            self.port = port
        }

        /// Parses `ADDRESS:PORT`: `127.0.0.1:9090`, `0.0.0.0:9090`, `[::1]:9090`, `localhost:9090`. An IPv6
        /// address needs its brackets, since its own colons would make the port ambiguous. Nil when `text` is not
        /// of that form or the port is not in 0...65535.
        public init?(parsing text: String) {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            var host = Substring(text[..<colon])
            guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
            if host.hasPrefix("[") {
                guard host.hasSuffix("]"), host.count > 2 else { return nil }
                host = host.dropFirst().dropLast()
            } else if host.contains(":") {
                return nil  // an IPv6 address without brackets
            }
            guard !host.isEmpty, !host.contains("["), !host.contains("]") else { return nil }
            self.init(host: String(host), port: port)
        }
    }
}

/// The `metrics_listener ADDRESS:PORT` line of a config file (mqttchat only; mosquitto has no metrics endpoint).
///
/// One form only, so a config reads the same everywhere: `metrics_listener 127.0.0.1:9090`. mosquitto's
/// `listener PORT [ADDRESS]` order is refused here rather than guessed at, and so is a second line, which would
/// otherwise silently replace the first.
enum MetricsListenerLine {
    static let option = "metrics_listener"

    /// Applies `line` to `configuration` when `option` is `metrics_listener`; returns false for any other option.
    static func take(
        _ option: String, _ line: ConfigLine, into configuration: inout BrokerConfiguration
    ) throws(BrokerConfigError) -> Bool {
        guard option == Self.option else { return false }
        let expected = "ADDRESS:PORT with a port in 0...65535, such as 127.0.0.1:9090 or [::1]:9090"
        let values = try line.values(1...Int.max)
        guard values.count == 1 else {  // most likely mosquitto's `listener PORT ADDRESS` order
            throw line.invalid(values.joined(separator: " "), expected: "one value, " + expected)
        }
        let value = values[0]
        guard let listener = BrokerConfiguration.MetricsListener(parsing: value) else {
            throw line.invalid(value, expected: expected)
        }
        guard configuration.metricsListener == nil else {
            throw line.invalid(value, expected: "a single metrics_listener line (one was given above)")
        }
        configuration.metricsListener = listener
        return true
    }
}
