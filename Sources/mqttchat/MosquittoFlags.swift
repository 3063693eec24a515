import ArgumentParser
import MQTTClient
import MQTTCore

/// The mosquitto_pub / mosquitto_sub flags beyond the connection basics, shared by `publish` and `subscribe`:
/// the will, persistent sessions (`-c`, `-x`), `--nodelay`, TLS, the protocol version (`-V`) and MQTT 5 properties (`-D`). Spelled and checked as mosquitto's
/// tools do, so their users need not read our help. Not part of `chat`, whose will carries its presence.
struct MosquittoFlags: ParsableArguments {
    @Option(name: .customLong("will-topic"), help: "Topic of the will the broker publishes if this client vanishes.")
    var willTopic: String?

    @Option(name: .customLong("will-payload"), help: "Payload of the will (default: empty).")
    var willPayload: String?

    @Option(name: .customLong("will-qos"), help: "QoS of the will (0, 1 or 2; default 0).")
    var willQoS: Int?

    @Flag(name: .customLong("will-retain"), help: "Ask the broker to retain the will.")
    var willRetain = false

    @Flag(
        name: [.customShort("c"), .customLong("disable-clean-session")],
        help: "Keep the session (subscriptions, queued QoS 1/2 messages) while away; needs -i.")
    var disableCleanSession = false

    @Flag(name: .customLong("nodelay"), help: "Disable Nagle's algorithm (TCP_NODELAY).")
    var nodelay = false

    @Option(name: .customLong("cafile"), help: "PEM file of trusted CAs; turns TLS on (default port 8883).")
    var caFile: String?

    @Option(name: .customLong("capath"), help: "Directory of hashed PEM CA files; turns TLS on (default port 8883).")
    var caPath: String?

    @Option(name: .customLong("cert"), help: "PEM client certificate (with --key).")
    var certFile: String?

    @Option(name: .customLong("key"), help: "PEM private key of --cert.")
    var keyFile: String?

    @Flag(name: .customLong("insecure"), help: "Do not check that the broker certificate names the host.")
    var insecure = false

    @Option(name: .customLong("tls-version"), help: "tlsv1.3, tlsv1.2 or tlsv1.1 (default: libmosquitto's choice).")
    var tlsVersion: String?

    @Option(
        name: [.customShort("V"), .customLong("protocol-version")],
        help: "mqttv5 (or 5), mqttv311 (or 311, the default unless -D is given), mqttv31 (or 31).")
    var protocolVersion: String?

    @Option(
        name: [.customShort("x")], parsing: .unconditional,
        help: "MQTT 5 session expiry interval: 0-4294967294 seconds, or -1 / 4294967295 / ∞ for never (default: -1 with -c, else 0).")
    var sessionExpiry: String?

    @Option(
        name: [.customShort("D"), .customLong("property")], parsing: .upToNextOption,
        help: "MQTT 5 property: COMMAND IDENTIFIER VALUE (user-property: COMMAND user-property NAME VALUE); implies -V mqttv5.")
    var properties: [String] = []

    func validate() throws {
        _ = try version()
        _ = try sessionExpiryInterval()
        if willTopic == nil, willPayload != nil || willQoS != nil || willRetain {
            throw ValidationError("--will-payload, --will-qos and --will-retain need --will-topic")
        }
        if let willQoS, !(0...2).contains(willQoS) { throw ValidationError("--will-qos must be 0, 1 or 2") }
        if (certFile == nil) != (keyFile == nil) { throw ValidationError("--cert and --key must be given together") }
        let tlsDetails = certFile != nil || insecure || tlsVersion != nil
        if tlsDetails, !usesTLS { throw ValidationError("TLS options need --cafile or --capath") }
        if let tlsVersion, !["tlsv1.3", "tlsv1.2", "tlsv1.1"].contains(tlsVersion) {
            throw ValidationError("--tls-version must be tlsv1.3, tlsv1.2 or tlsv1.1, got '\(tlsVersion)'")
        }
    }

    /// Whether the connection uses TLS (then the default port is 8883, as with mosquitto's tools).
    var usesTLS: Bool { caFile != nil || caPath != nil }

    /// The `-D` properties, parsed for `command` (which decides what `-D publish` / `-D subscribe` may say).
    func mqtt5Properties(for command: MQTT5PropertyFlags.Command) throws(ValidationError) -> MQTT5PropertyFlags {
        let parsed = try MQTT5PropertyFlags(properties, for: command)
        if parsed.hasWillProperties, willTopic == nil { throw ValidationError("-D will … needs --will-topic") }
        if parsed.sessionExpiryInterval != nil, sessionExpiry != nil {
            throw ValidationError("give the session expiry interval once: -x or -D connect session-expiry-interval")
        }
        return parsed
    }

    /// The protocol version: `-V`, or MQTT 5 when `-D` is given without `-V` (mosquitto's tools switch to v5 on
    /// `-D`; we refuse `-D` with an explicit 3.x rather than silently send nothing, as mosquitto_pub does).
    func version() throws(ValidationError) -> MQTTClientProtocolVersion {
        let version: MQTTClientProtocolVersion
        switch protocolVersion {
        case nil: return properties.isEmpty ? .v3_1_1 : .v5
        case "mqttv5", "5": return .v5
        case "mqttv311", "311": version = .v3_1_1
        case "mqttv31", "31": version = .v3_1
        case let other?:
            throw ValidationError("-V must be mqttv5 (5), mqttv311 (311) or mqttv31 (31), got '\(other)'")
        }
        if !properties.isEmpty {
            throw ValidationError("-D sets MQTT 5 properties: use -V mqttv5 (or no -V), not -V \(protocolVersion ?? "")")
        }
        return version
    }

    /// `-x` as mosquitto reads it: 0…4294967295, with -1 and ∞ meaning 4294967295 (never expires); nil when absent.
    func sessionExpiryInterval() throws(ValidationError) -> UInt32? {
        guard let sessionExpiry else { return nil }
        if sessionExpiry == "∞" || sessionExpiry == "-1" { return .max }
        guard let number = Int64(sessionExpiry) else { throw ValidationError("-x: session-expiry-interval not a number") }
        guard let interval = UInt32(exactly: number) else {
            throw ValidationError("-x: session-expiry-interval out of range (0 to 4294967295, or -1 / ∞)")
        }
        return interval
    }

    /// Adds these settings to `configuration`; a will topic that is no valid topic name fails with 65.
    /// `properties` are the parsed `-D` values (see ``mqtt5Properties(for:)``).
    func apply(
        to configuration: inout MQTTClientConfiguration, clientID: String?, properties: MQTT5PropertyFlags
    ) throws(CLIFailure) {
        let version: MQTTClientProtocolVersion
        let requestedExpiry: UInt32?
        do {
            version = try self.version()
            requestedExpiry = try sessionExpiryInterval() ?? properties.sessionExpiryInterval
        } catch { throw CLIFailure(.usage, error.message) }
        configuration.protocolVersion = version
        configuration.cleanSession = !disableCleanSession
        if version == .v5 {
            // mosquitto's tools: -c without -x keeps the session forever, which needs an id to come back to.
            let expiry = requestedExpiry ?? (disableCleanSession ? UInt32.max : nil)
            if expiry == .max, clientID == nil {
                throw CLIFailure(.usage, "a session that never expires (-c without -x, or -x -1) needs a client id (-i)")
            }
            configuration.sessionExpiryInterval = expiry
        } else {
            if sessionExpiry != nil {
                Console.error("Warning: -x applies to MQTT v5 clients only; ignored at MQTT 3.1.1 (add -V mqttv5)")
            }
            // Like mosquitto's tools: a random id would make the kept session unreachable.
            if disableCleanSession, clientID == nil {
                throw CLIFailure(.usage, "-c needs a client id (-i): a persistent session belongs to its id")
            }
        }
        configuration.tcpNoDelay = nodelay
        if let willTopic {
            do { try PublishCommand.checkTopicName(willTopic) } catch {
                throw CLIFailure(error.code, error.message.replacingOccurrences(of: "invalid topic", with: "invalid --will-topic"))
            }
            configuration.will = MQTTWill(
                topic: willTopic, payload: Array((willPayload ?? "").utf8),
                qos: QoS(rawValue: UInt8(clamping: willQoS ?? 0)) ?? .atMostOnce, retain: willRetain,
                properties: properties.will, delayInterval: properties.willDelayInterval)
        }
        if usesTLS {
            configuration.tls = MQTTTLSConfiguration(
                caFile: caFile, caPath: caPath, certFile: certFile, keyFile: keyFile, verifyHostname: !insecure,
                tlsVersion: tlsVersion)
        }
    }
}
