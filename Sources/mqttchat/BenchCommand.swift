import ArgumentParser
import Foundation
import MQTTCore
import MQTTLoadGen
import NIOCore

/// `mqttchat bench`: an MQTT load generator for comparing brokers.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "MQTT load generator: fan-out, fan-in, pairs and idle-connection scenarios against a broker.",
        discussion: """
            Counts lost, duplicated and out-of-order messages (sequence numbers in the payload) and measures \
            delivered messages per second from the first send to the last reception. With --rate, sending is \
            paced (by default the publishers interleave into one evenly spaced stream; --pacing aligned sends a \
            burst from every publisher at once) and latency percentiles are reported from a send time stamped in \
            the payload.

            --protocol 5 runs the same scenarios over MQTT 5 (CONNECT at level 5, SUBSCRIBE and PUBLISH with \
            their property blocks; success acknowledgements in their 4-byte form). --topic-alias (MQTT 5 only) \
            sends each publisher's first PUBLISH with its topic and Topic Alias 1 and every later one with an \
            empty topic and the alias; the broker's CONNACK must allow at least one alias. Every publish/subscribe \
            run prints the bytes one PUBLISH takes on the wire (and with --topic-alias, an aliased one).
            """
    )

    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "tcp (MQTT on TCP) or ws (MQTT over WebSockets, subprotocol mqtt, after an HTTP/1.1 upgrade).")
    var transport: TransportArgument = .tcp
    @Option(name: .customLong("ws-path"), help: "With --transport ws: the path of the upgrade request.")
    var wsPath = "/mqtt"
    @Option(help: "User name in every CONNECT (ejabberd's anonymous login wants one).") var username: String?
    @Option(help: "Password in every CONNECT (with --username).") var password: String?
    @Option(
        name: [.customShort("V"), .customLong("protocol")],
        help: "MQTT protocol version: 311 (or mqttv311, 3.1.1; the default) or 5 (or mqttv5), as mosquitto's -V.")
    var protocolVersion: ProtocolArgument = .v311
    @Flag(
        name: .customLong("topic-alias"),
        help: "MQTT 5: publish with Topic Alias 1 after each publisher's first message (empty topic on the wire).")
    var topicAlias = false
    @Option(help: "fanout | fanin | pairs | idle") var scenario: ScenarioArgument = .fanout
    @Option(help: "QoS of every publish and subscription: 0, 1 or 2.") var qos = 0
    @Option(help: "Publishing connections (default: fanout 1, fanin 10, pairs 10).") var publishers: Int?
    @Option(help: "Subscribing connections (default: fanout 10, fanin 1, pairs = publishers).") var subscribers: Int?
    @Option(help: "Messages per publisher (ignored with --duration).") var messages = 10_000
    @Option(help: "Publish for this many seconds instead of a message count; idle mode: hold time.")
    var duration: Double?
    @Option(name: .customLong("payload-size"), help: "Payload bytes (at least 16: the stamp).") var payloadSize = 16
    @Option(help: "Fixed-rate mode: total messages per second over all publishers; reports latency.")
    var rate: Double?
    @Option(help: "Fixed-rate mode: interleaved (one evenly spaced stream) or aligned (a burst from every publisher at once).")
    var pacing: PacingArgument = .interleaved
    @Option(help: "Unacknowledged QoS 1/2 messages per publisher (keep <= the broker's inflight limit).") var inflight = 20
    @Option(help: "Idle mode: connections to open.") var connections = 100
    @Option(
        name: .customLong("broker-pid"),
        help: "Broker process to observe: its VmRSS (idle mode), or its CPU time and system calls per message.")
    var brokerPID: Int32?
    @Option(help: "Keepalive in seconds announced in CONNECT.") var keepalive: UInt16 = 60
    @Option(help: "Longest publishing phase in seconds (after --duration, if any).") var timeout = 60.0
    @Option(help: "Seconds to wait for missing messages once the publishers finish.") var drain = 3.0
    @Option(help: "Event loop threads of the generator.") var threads = 1
    @Flag(name: .customLong("full-decode"), help: "Decode every packet with MQTTPacketDecoder (for comparison).")
    var fullDecode = false
    @Flag(help: "Print one JSON object after the table line.") var json = false
    @Flag(help: "Print a live progress line on stderr.") var progress = false

    /// `--scenario` values.
    enum ScenarioArgument: String, ExpressibleByArgument, CaseIterable {
        case fanout, fanin, pairs, idle
    }

    /// `--transport` values (see ``LoadGenConfig/Transport``).
    enum TransportArgument: String, ExpressibleByArgument, CaseIterable {
        case tcp, ws
    }

    /// `--protocol` / `-V` values, spelled as mosquitto's `-V` or as the version number.
    enum ProtocolArgument: String, ExpressibleByArgument, CaseIterable {
        case v311 = "311"
        case v5 = "5"

        init?(argument: String) {
            switch argument.lowercased() {
            case "311", "mqttv311", "3.1.1", "4": self = .v311
            case "5", "mqttv5", "5.0": self = .v5
            default: return nil
            }
        }

        /// The MQTT protocol version it names.
        var version: MQTTProtocolVersion { self == .v5 ? .v5 : .v3_1_1 }
    }

    /// `--pacing` values (see ``LoadGenConfig/Pacing``).
    enum PacingArgument: String, ExpressibleByArgument, CaseIterable {
        case interleaved, aligned
    }

    func run() async throws {
        guard let qos = QoS(rawValue: UInt8(clamping: qos)), (0...2).contains(self.qos) else {
            throw ValidationError("--qos must be 0, 1 or 2")
        }
        let scenario = LoadScenario(rawValue: scenario.rawValue) ?? .fanout
        var config = LoadGenConfig(scenario: scenario, qos: qos)
        config.host = host
        config.port = port
        config.transport = LoadGenConfig.Transport(rawValue: transport.rawValue) ?? .tcp
        config.webSocketPath = wsPath
        config.username = username
        config.password = password
        if let publishers { config.publishers = publishers }
        if let subscribers {
            config.subscribers = subscribers
        } else if scenario == .pairs {
            config.subscribers = config.publishers
        }
        config.messagesPerPublisher = messages
        config.duration = duration
        config.payloadSize = payloadSize
        config.rate = rate
        config.pacing = LoadGenConfig.Pacing(rawValue: pacing.rawValue) ?? .interleaved
        config.inflight = inflight
        config.connections = connections
        config.brokerPID = brokerPID
        config.keepAliveSeconds = keepalive
        config.publishTimeout = timeout
        config.drainTimeout = drain
        config.threads = threads
        config.decodePath = fullDecode ? .full : .scan
        config.protocolVersion = protocolVersion.version
        if topicAlias, protocolVersion != .v5 { throw ValidationError("--topic-alias needs --protocol 5") }
        config.topicAlias = topicAlias

        var reporter: (@Sendable (LoadProgress) -> Void)?
        if progress {
            reporter = { sample in
                let line = "\rbench: sent=\(sample.sent) received=\(sample.received) connected=\(sample.connected)   "
                FileHandle.standardError.write(Data(line.utf8))
            }
        }
        let result: LoadGenResult
        do {
            result = try await LoadGenerator.run(config, progress: reporter)
        } catch {
            if progress { FileHandle.standardError.write(Data("\n".utf8)) }
            throw BenchFailure(error: error)
        }
        if progress { FileHandle.standardError.write(Data("\n".utf8)) }
        print(result.tableLine)
        if let wireSizeLine = result.wireSizeLine { print(wireSizeLine) }
        if json { print(result.jsonLine) }
    }
}

/// A run that could not be carried out, printed as "Error: <reason>".
private struct BenchFailure: Error, CustomStringConvertible {
    let error: LoadGenError
    var description: String { error.description }
}
