import MQTTCore

/// Gathers mosquitto's bridge options: `connection NAME` starts a bridge, and the bridge options after it belong
/// to it, as in mosquitto's `conf.c` (a bridge option before any `connection` is an error).
struct BridgeConfigLines {
    /// Bridge options this broker implements.
    static let options: Set<String> = [
        "connection", "address", "addresses", "topic", "remote_clientid", "remote_username", "remote_password",
        "local_clientid", "local_username", "cleansession", "bridge_protocol_version", "try_private", "notifications",
        "notification_topic", "restart_timeout", "keepalive_interval", "bridge_cafile", "bridge_certfile",
        "bridge_keyfile", "bridge_insecure", "notifications_local_only", "round_robin", "start_type",
    ]

    private(set) var bridges: [BridgeConfiguration] = []

    /// Records `option` if it is a bridge option; false for any other option.
    mutating func take(_ option: String, _ line: ConfigLine) throws(BrokerConfigError) -> Bool {
        guard Self.options.contains(option) else { return false }
        if option == "connection" {
            let name = try line.single()
            guard !bridges.contains(where: { $0.name == name }) else {
                throw line.invalid(name, expected: "a connection name not used before")
            }
            bridges.append(BridgeConfiguration(name: name))
            return true
        }
        guard var bridge = bridges.popLast() else {
            throw line.invalid(option, expected: "a bridge option after a 'connection' line")
        }
        try Self.apply(option, line, to: &bridge)
        bridges.append(bridge)
        return true
    }

    /// The bridges, each checked for what mosquitto also requires (an address, a topic, TLS files in pairs).
    func configurations() throws(BrokerConfigError) -> [BridgeConfiguration] {
        for bridge in bridges {
            guard !bridge.addresses.isEmpty else {
                throw .missingValue(source: "connection \(bridge.name)", line: 0, option: "address")
            }
            guard !bridge.topics.isEmpty else {
                throw .missingValue(source: "connection \(bridge.name)", line: 0, option: "topic")
            }
            if let tls = bridge.tls, (tls.certificateFile == nil) != (tls.keyFile == nil) {
                throw .missingValue(
                    source: "connection \(bridge.name)", line: 0,
                    option: tls.certificateFile == nil ? "bridge_certfile" : "bridge_keyfile")
            }
        }
        return bridges
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private static func apply(
        _ option: String, _ line: ConfigLine, to bridge: inout BridgeConfiguration
    ) throws(BrokerConfigError) {
        switch option {
        case "address", "addresses":
            for value in try line.values(1...64) {
                bridge.addresses.append(try address(value, line))
            }
        case "topic":
            bridge.topics.append(try topic(line))
        case "remote_clientid": bridge.remoteClientID = try line.single()
        case "remote_username": bridge.remoteUsername = try line.single()
        case "remote_password": bridge.remotePassword = try line.single()
        case "local_clientid": bridge.localClientID = try line.single()
        case "local_username": bridge.localUsername = try line.single()
        case "cleansession": bridge.cleanSession = try line.bool(try line.single())
        case "try_private": bridge.tryPrivate = try line.bool(try line.single())
        case "notifications": bridge.notifications = try line.bool(try line.single())
        case "notification_topic": bridge.notificationTopic = try line.single()
        case "round_robin":
            // We always move to the next address on reconnect; mosquitto's `false` (return to the first address
            // when it is back) is the only difference, and it affects which broker is used, not what is delivered.
            _ = try line.bool(try line.single())
        case "notifications_local_only": bridge.notificationsLocalOnly = try line.bool(try line.single())
        case "start_type":
            let value = try line.single()
            guard value == "automatic" else { throw line.invalid(value, expected: "automatic") }
        case "bridge_protocol_version":
            let value = try line.single()
            switch value {
            case "mqttv311": bridge.protocolVersion = .v3_1_1
            case "mqttv50": bridge.protocolVersion = .v5
            default: throw line.invalid(value, expected: "mqttv311 or mqttv50")
            }
        case "keepalive_interval":
            bridge.keepaliveSeconds = UInt16(try line.integer(try line.single(), in: 5...65535))
        case "restart_timeout":
            let values = try line.values(1...2)
            let first = try line.integer(values[0], in: 1...86400)
            if values.count == 2 {
                let cap = try line.integer(values[1], in: first...86400)
                bridge.restartTimeout = .backoff(base: first, cap: cap)
            } else {
                bridge.restartTimeout = .constant(seconds: first)
            }
        case "bridge_cafile":
            var tls = bridge.tls ?? BridgeConfiguration.TLS(caFile: "")
            tls.caFile = try line.single()
            bridge.tls = tls
        case "bridge_certfile":
            var tls = bridge.tls ?? BridgeConfiguration.TLS(caFile: "")
            tls.certificateFile = try line.single()
            bridge.tls = tls
        case "bridge_keyfile":
            var tls = bridge.tls ?? BridgeConfiguration.TLS(caFile: "")
            tls.keyFile = try line.single()
            bridge.tls = tls
        case "bridge_insecure":
            var tls = bridge.tls ?? BridgeConfiguration.TLS(caFile: "")
            tls.insecure = try line.bool(try line.single())
            bridge.tls = tls
        default:
            throw .unsupportedOption(source: line.source, line: line.number, option: option)
        }
    }

    /// `HOST[:PORT]`; a bracketed IPv6 address keeps its colons (`[::1]:1884`).
    static func address(_ value: String, _ line: ConfigLine) throws(BrokerConfigError) -> BridgeConfiguration.Address {
        var host = Substring(value)
        var port = 1883
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if rest.hasPrefix(":") { port = try line.integer(String(rest.dropFirst()), in: 1...65535) }
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            port = try line.integer(String(host[host.index(after: colon)...]), in: 1...65535)
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw line.invalid(value, expected: "HOST[:PORT]") }
        return BridgeConfiguration.Address(host: String(host), port: port)
    }

    /// `topic PATTERN [out|in|both] [QOS] [LOCAL_PREFIX] [REMOTE_PREFIX]`; `""` stands for an empty value.
    static func topic(_ line: ConfigLine) throws(BrokerConfigError) -> BridgeTopic {
        let values = line.valuesKeepingHash.map { $0 == "\"\"" ? "" : $0 }
        guard !values.isEmpty else { throw .missingValue(source: line.source, line: line.number, option: "topic") }
        guard values.count <= 5 else { throw .extraValues(source: line.source, line: line.number, option: "topic") }
        var topic = BridgeTopic(pattern: values[0])
        if values.count > 1 {
            guard let direction = BridgeTopic.Direction(rawValue: values[1]) else {
                throw line.invalid(values[1], expected: "out, in or both")
            }
            topic.direction = direction
        }
        if values.count > 2 {
            guard let qos = QoS(rawValue: UInt8(try line.integer(values[2], in: 0...2))) else {
                throw line.invalid(values[2], expected: "0, 1 or 2")
            }
            topic.qos = qos
        }
        if values.count > 3 { topic.localPrefix = values[3] }
        if values.count > 4 { topic.remotePrefix = values[4] }
        for prefix in [topic.localPrefix, topic.remotePrefix] where prefix.contains("+") || prefix.contains("#") {
            throw line.invalid(prefix, expected: "a topic prefix without wildcards")
        }
        if topic.pattern.isEmpty, topic.localPrefix.isEmpty && topic.remotePrefix.isEmpty {
            throw line.invalid("\"\"", expected: "a pattern, or prefixes when the pattern is empty")
        }
        if topic.pattern.isEmpty, topic.localPrefix.isEmpty || topic.remotePrefix.isEmpty {
            throw line.invalid("\"\"", expected: "both prefixes when the pattern is empty")
        }
        return topic
    }
}
