import ArgumentParser
import MQTTClient
import MQTTCore

/// The mosquitto_pub / mosquitto_sub flags beyond the connection basics, shared by `publish` and `subscribe`:
/// the will, persistent sessions, `--nodelay`, TLS and the protocol version. Spelled and checked as mosquitto's
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
        help: "mqttv311 (or 311, the default), mqttv31 (or 31); mqttv5 is not supported by this build yet.")
    var protocolVersion: String?

    @Option(name: [.customShort("x")], help: "MQTT 5 session expiry interval: not supported by this build yet.")
    var sessionExpiry: String?

    @Option(
        name: [.customShort("D"), .customLong("property")], parsing: .upToNextOption,
        help: "MQTT 5 property (COMMAND IDENTIFIER VALUE): not supported by this build yet.")
    var properties: [String] = []

    /// The message for every MQTT 5-only request, so scripts can match one line.
    static let mqtt5Unsupported = "MQTT 5 is not supported by this build yet"

    func validate() throws {
        if !properties.isEmpty { throw ValidationError("-D: \(Self.mqtt5Unsupported) (MQTT 5 properties)") }
        if sessionExpiry != nil { throw ValidationError("-x: \(Self.mqtt5Unsupported) (session expiry interval)") }
        _ = try version()
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

    /// The protocol version `-V` asks for.
    private func version() throws(ValidationError) -> MQTTClientProtocolVersion {
        switch protocolVersion {
        case nil, "mqttv311", "311": return .v3_1_1
        case "mqttv31", "31": return .v3_1
        case "mqttv5", "5": throw ValidationError("-V \(protocolVersion ?? ""): \(Self.mqtt5Unsupported)")
        case let other?: throw ValidationError("-V must be mqttv311 (311) or mqttv31 (31), got '\(other)'")
        }
    }

    /// Adds these settings to `configuration`; a will topic that is no valid topic name fails with 65.
    func apply(to configuration: inout MQTTClientConfiguration, clientID: String?) throws(CLIFailure) {
        do { configuration.protocolVersion = try version() } catch { throw CLIFailure(.usage, error.message) }
        if disableCleanSession {
            // Like mosquitto's tools: a random id would make the kept session unreachable.
            guard clientID != nil else {
                throw CLIFailure(.usage, "-c needs a client id (-i): a persistent session belongs to its id")
            }
            configuration.cleanSession = false
        }
        configuration.tcpNoDelay = nodelay
        if let willTopic {
            do { try PublishCommand.checkTopicName(willTopic) } catch {
                throw CLIFailure(error.code, error.message.replacingOccurrences(of: "invalid topic", with: "invalid --will-topic"))
            }
            configuration.will = MQTTWill(
                topic: willTopic, payload: Array((willPayload ?? "").utf8),
                qos: QoS(rawValue: UInt8(clamping: willQoS ?? 0)) ?? .atMostOnce, retain: willRetain)
        }
        if usesTLS {
            configuration.tls = MQTTTLSConfiguration(
                caFile: caFile, caPath: caPath, certFile: certFile, keyFile: keyFile, verifyHostname: !insecure,
                tlsVersion: tlsVersion)
        }
    }
}
