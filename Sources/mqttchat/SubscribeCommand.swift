import ArgumentParser
import Foundation
import MQTTChat
import MQTTClient
import MQTTCore

/// `mqttchat subscribe`: mosquitto_sub's everyday flags, with chat envelopes decoded.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Subscribe to topics and print what arrives (chat envelopes decoded).",
        discussion: """
            -F FORMAT prints each message as mosquitto_sub -F does (%t %p %q %r %m %l %x %X %I %U %j %J %%, the \
            MQTT 5 properties %P %C %D %E %F %R %S %A, @ strftime codes, \\ \n \t ... escapes). Will, -c, \
            --nodelay, TLS, -V mqttv5, -x, -D (e.g. -D subscribe subscription-identifier N) and \
            --retain-as-published work as in mosquitto_sub; --nl and --retain-handling are ours. A refused \
            subscription ends the run with the reason, e.g. "Subscription to 'f' refused: Not authorized (0x87)". \
            Exit codes: 0 done, 27 timeout (-W), 64 usage, 65 invalid topic filter, 69 broker unreachable, \
            77 authentication or subscription refused.
            """,
        helpNames: [.long])

    @OptionGroup var connection: ClientOptions

    @OptionGroup(title: "Will, session, TLS and protocol (as mosquitto_sub)") var flags: MosquittoFlags

    @Option(name: [.customShort("t"), .long], help: "Topic filter to subscribe to (repeatable).")
    var topic: [String] = []

    @Option(name: [.customShort("q"), .long], help: "QoS of the subscriptions (0, 1 or 2).")
    var qos = 0

    @Option(name: [.customShort("C"), .customLong("count")], help: "Exit after this many messages.")
    var count: Int?

    @Option(name: [.customShort("W"), .customLong("timeout")], help: "Exit with code 27 after this many seconds.")
    var timeout: Double?

    @Flag(name: [.customShort("v"), .long], help: "Print the topic before each message (text format).")
    var verbose = false

    @Flag(name: [.customShort("d"), .long], help: "Report connection and subscriptions on stderr.")
    var debug = false

    @Option(help: "Output format: text, json (one object per line) or delimited (length-prefixed envelopes).")
    var format: SubscribeOutputFormat = .text

    @Option(name: .customShort("F"), help: "Print each message in this mosquitto_sub format (e.g. '%t %q %p').")
    var mosquittoFormat: String?

    @Flag(help: "Indented JSON for --format json and -F %j / %J.")
    var pretty = false

    @Flag(name: .customShort("N"), help: "Do not end each printed message with a newline.")
    var noEndOfLine = false

    @Flag(
        name: .customLong("retain-as-published"),
        help: "MQTT 5: keep the retain flag the publisher set (ignored at 3.1.1, as by mosquitto_sub).")
    var retainAsPublished = false

    @Flag(
        name: [.customLong("nl"), .customLong("no-local")],
        help: "MQTT 5: no local; do not receive messages published under this client id (its will included).")
    var noLocal = false

    @Option(
        name: [.customLong("retain-handling"), .customLong("rh")],
        help: "MQTT 5 retain handling: 0 send retained messages (default), 1 only for a new subscription, 2 never.")
    var retainHandling: UInt8?

    func validate() throws {
        guard !topic.isEmpty else { throw ValidationError("at least one -t TOPIC is required") }
        guard QoS(rawValue: UInt8(clamping: qos)) != nil, qos >= 0 else { throw ValidationError("-q must be 0, 1 or 2") }
        if let count, count < 1 { throw ValidationError("-C must be at least 1") }
        if let timeout, timeout <= 0 { throw ValidationError("-W must be positive") }
        if mosquittoFormat != nil, format != .text { throw ValidationError("-F cannot be combined with --format \(format)") }
        _ = try parsedFormat()
        _ = try subscribeOptions()
    }

    /// The MQTT 5 subscription options of every `-t`: `--retain-as-published` is dropped at 3.1.1 with a warning (as
    /// mosquitto_sub drops it silently); `--nl` and `--retain-handling` need MQTT 5.
    private func subscribeOptions(warn: Bool = false) throws(ValidationError) -> MQTTSubscribeOptions {
        let properties = try flags.mqtt5Properties(for: .subscribe)
        let v5 = try flags.version() == .v5
        if !v5, noLocal || retainHandling != nil {
            throw ValidationError("--nl and --retain-handling need MQTT 5 (-V mqttv5)")
        }
        if !v5, retainAsPublished, warn {
            Console.error("Warning: --retain-as-published applies to MQTT v5 clients only; ignored (add -V mqttv5)")
        }
        guard let handling = MQTTRetainHandling(rawValue: retainHandling ?? 0) else {
            throw ValidationError("--retain-handling must be 0, 1 or 2")
        }
        return MQTTSubscribeOptions(
            noLocal: noLocal, retainAsPublished: retainAsPublished && v5, retainHandling: handling,
            subscriptionIdentifier: properties.subscriptionIdentifier)
    }

    /// `-F`, parsed; mosquitto_sub's own words when it is malformed.
    private func parsedFormat() throws(ValidationError) -> MosquittoFormat? {
        guard let mosquittoFormat else { return nil }
        do { return try MosquittoFormat(mosquittoFormat, pretty: pretty) } catch {
            throw ValidationError("-F: \(error.message)")
        }
    }

    func run() async throws {
        try await CLIFailure.reporting("subscribe") {
            let started = ContinuousClock.now
            for filter in topic { try TopicFilterCheck.check(filter) }
            let properties: MQTT5PropertyFlags
            do throws(ValidationError) { properties = try flags.mqtt5Properties(for: .subscribe) } catch { throw CLIFailure(.usage, error.message) }
            var stream: AsyncStream<MQTTMessage>?
            let client = try await MQTTConnection.open(
                connection, flags, properties: properties, clientID: connection.clientID(defaultPrefix: "mqttchat-sub"),
                reconnect: .exponential()
            ) { stream = $0.messages() }
            let messages = stream ?? client.messages()
            if debug { Console.error("Connected to \(connection.address(tls: flags.usesTLS))") }
            let outcome: SubscribeOutcome
            do {
                outcome = try await receive(client, messages, started: started)
            } catch {
                await client.disconnect()
                throw error
            }
            await client.disconnect()
            if case .timedOut(let received) = outcome {
                let expected = count.map { " of \($0)" } ?? ""
                throw CLIFailure(.timeout, "timed out after \(timeout ?? 0) s (\(received)\(expected) messages)")
            }
        }
    }

    /// Subscribes, then prints messages until `-C` is reached, `-W` runs out or the client goes away.
    /// `messages` was created before CONNECT, so nothing (queued for a persistent session, retained) is missed.
    private func receive(
        _ client: MQTTClient, _ messages: AsyncStream<MQTTMessage>, started: ContinuousClock.Instant
    ) async throws(CLIFailure) -> SubscribeOutcome {
        let level = QoS(rawValue: UInt8(clamping: qos)) ?? .atMostOnce
        let options: MQTTSubscribeOptions
        do { options = try subscribeOptions(warn: true) } catch { throw CLIFailure(.usage, error.message) }
        for filter in topic {
            do {
                let granted = try await client.subscribe(filter, qos: level, options: options)
                if debug { Console.error("Subscribed to \(filter) (granted QoS \(granted.rawValue))") }
            } catch {
                throw CLIFailure(
                    refused: "Subscription to '\(filter)'", error, address: connection.address(tls: flags.usesTLS))
            }
        }
        let custom: MosquittoFormat?
        do { custom = try parsedFormat() } catch { throw CLIFailure(.usage, error.message) }
        let printer = SubscribePrinter(
            format: format, verbose: verbose, custom: custom, pretty: pretty, endOfLine: !noEndOfLine)
        let limit = count
        let deadline = timeout.map { started + .milliseconds(Int64(($0 * 1000).rounded())) }
        return await withTaskGroup(of: SubscribeOutcome.self) { group in
            group.addTask {
                var received = 0
                for await message in messages {
                    printer.print(message)
                    received += 1
                    if let limit, received >= limit { return .done }
                }
                return .ended(received)
            }
            if let deadline {
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    return .timedOut(received: printer.printedCount)
                }
            }
            let first = await group.next() ?? .done
            group.cancelAll()
            return first
        }
    }
}

/// How a subscription run ended.
enum SubscribeOutcome: Sendable {
    /// `-C` messages arrived.
    case done
    /// The message stream ended (the client went away) after this many messages.
    case ended(Int)
    /// `-W` ran out after this many messages.
    case timedOut(received: Int)
}

/// The output formats of `subscribe --format`.
enum SubscribeOutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// One readable line per message.
    case text
    /// One JSON object per line.
    case json
    /// Varint-length-prefixed protobuf envelopes (SwiftProtobuf's `BinaryDelimited`), replayable with
    /// `publish --delimited -f FILE`; messages that are not chat envelopes are skipped.
    case delimited
}

/// Writes received messages to stdout in one format; counts what it printed.
final class SubscribePrinter: @unchecked Sendable {
    // @unchecked: only the single receiving task calls `print`; `printedCount` is read under `lock`.
    private let format: SubscribeOutputFormat
    private let verbose: Bool
    private let custom: MosquittoFormat?
    private let endOfLine: [UInt8]
    private let lock = NSLock()
    private var printed = 0
    private var warnedAboutRaw = false
    private let encoder = JSONEncoder()

    init(format: SubscribeOutputFormat, verbose: Bool, custom: MosquittoFormat?, pretty: Bool, endOfLine: Bool) {
        self.format = format
        self.verbose = verbose
        self.custom = custom
        self.endOfLine = endOfLine ? [0x0A] : []
        encoder.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
            : [.sortedKeys, .withoutEscapingSlashes]
    }

    /// How many messages were handled so far.
    var printedCount: Int { lock.withLock { printed } }

    func print(_ message: MQTTMessage) {
        if let custom {
            // mosquitto_sub -F: the payload as raw bytes, no chat decoding, exactly what mosquitto prints.
            if let bytes = custom.render(message, at: MosquittoFormat.now()) { Console.bytes(bytes + endOfLine) }
            lock.withLock { printed += 1 }
            return
        }
        let envelope = ChatPayload.envelope(topic: message.topic, payload: message.payload)
        switch format {
        case .text:
            let body = envelope.flatMap(EnvelopeSummary.init).map(\.line) ?? ChatPayload.rawText(message.payload).text
            Console.bytes(Array((verbose ? "\(message.topic) \(body)" : body).utf8) + endOfLine)
        case .json:
            Console.line(json(message, envelope: envelope))
        case .delimited:
            if envelope != nil {
                Console.bytes(Varint.encode(UInt64(message.payload.count)) + message.payload)
            } else if !warnedAboutRaw {
                warnedAboutRaw = true
                Console.error("mqttchat subscribe: skipping messages that are not chat envelopes (e.g. on \(message.topic))")
            }
        }
        lock.withLock { printed += 1 }
    }

    private func json(_ message: MQTTMessage, envelope: ProtoEnvelope?) -> String {
        let summary = envelope.flatMap(EnvelopeSummary.init)
        let raw = summary == nil ? ChatPayload.rawText(message.payload) : nil
        let object = SubscribeJSONLine(
            topic: message.topic, qos: Int(message.qos.rawValue), retain: message.retain,
            payload: raw.flatMap { $0.isHex ? nil : $0.text }, payloadHex: raw.flatMap { $0.isHex ? $0.text : nil },
            envelope: summary)
        guard let data = try? encoder.encode(object), let line = String(data: data, encoding: .utf8) else {
            return "{\"topic\":\"?\",\"error\":\"unencodable\"}"
        }
        return line
    }
}

/// One line of `subscribe --format json`.
struct SubscribeJSONLine: Encodable {
    let topic: String
    let qos: Int
    let retain: Bool
    /// The payload as text, when it is UTF-8 and not a chat envelope.
    let payload: String?
    /// The payload in hex, when it is neither UTF-8 nor a chat envelope.
    let payloadHex: String?
    /// The decoded chat envelope.
    let envelope: EnvelopeSummary?

    enum CodingKeys: String, CodingKey {
        case topic, qos, retain, payload, payloadHex = "payload_hex", envelope
    }
}

/// Protobuf base-128 varints, the length prefix of `BinaryDelimited` streams.
enum Varint {
    /// The varint encoding of `value`.
    static func encode(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var rest = value
        repeat {
            let low = UInt8(rest & 0x7F)
            rest >>= 7
            bytes.append(rest == 0 ? low : low | 0x80)
        } while rest != 0
        return bytes
    }
}

/// Checks topic filters before connecting, so a bad one fails with its reason (exit 65) rather than a bare
/// libmosquitto refusal.
enum TopicFilterCheck {
    /// Throws, with the reason, when `filter` is not a valid MQTT 3.1.1 topic filter (sections 4.7.1 and 4.7.3).
    static func check(_ filter: String) throws(CLIFailure) {
        func invalid(_ reason: String) -> CLIFailure { CLIFailure(.dataError, "invalid topic '\(filter)': \(reason)") }
        if filter.isEmpty { throw invalid("it is empty") }
        if filter.utf8.contains(0) { throw invalid("it contains U+0000") }
        if filter.utf8.count > 65535 { throw invalid("it is \(filter.utf8.count) bytes long, the limit is 65535") }
        let levels = filter.split(separator: "/", omittingEmptySubsequences: false)
        for (index, level) in levels.enumerated() {
            if level.contains("#") {
                if level != "#" { throw invalid("'#' must be a whole level (e.g. 'a/#'), not part of '\(level)'") }
                if index != levels.count - 1 { throw invalid("'#' must be the last level of a filter") }
            }
            if level.contains("+"), level != "+" {
                throw invalid("'+' must be a whole level (e.g. 'a/+/b'), not part of '\(level)'")
            }
        }
    }
}
