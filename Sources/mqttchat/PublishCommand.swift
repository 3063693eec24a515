import ArgumentParser
import Foundation
import MQTTChat
import MQTTClient
import MQTTCore

/// `mqttchat publish`: mosquitto_pub's everyday flags, plus chat envelopes and replay of delimited streams.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish a message, lines from stdin, a chat envelope, or a stream of envelopes.",
        discussion: """
            Give exactly one payload: -m, -f, -l, -n, --chat-text, --chat-gift, or --delimited -f FILE. \
            With --room and --name, -l sends every line as a chat text. Chat envelopes go to the room's topic \
            (mqttchat/rooms/ROOM/messages). Will, -c, --nodelay, TLS, -V mqttv5, -x and -D (e.g. \
            -D publish user-property K V, -D publish content-type T) work as in mosquitto_pub. A publish the broker \
            refuses (MQTT 5 PUBACK/PUBREC reason code, QoS 1 and 2) ends the run with the reason, e.g. \
            "Publish to 't' refused: Not authorized (0x87)". Exit codes: 0 sent, 64 usage, 65 invalid \
            topic/room/name, malformed stream or a topic/payload the broker refused, 66 unreadable file, 69 broker \
            unreachable or another refusal, 77 authentication refused or publish not authorised.
            """,
        helpNames: [.long])

    @OptionGroup var connection: ClientOptions

    @OptionGroup(title: "Will, session, TLS and protocol (as mosquitto_pub)") var flags: MosquittoFlags

    @Option(name: [.customShort("t"), .long], help: "Topic to publish to.")
    var topic: String?

    @Option(name: [.customShort("m"), .long], help: "The message to send.")
    var message: String?

    @Option(name: [.customShort("f"), .long], help: "Send the whole file as one message (or replay it with --delimited).")
    var file: String?

    @Flag(name: [.customShort("l"), .customLong("stdin-line")], help: "Send each line read from stdin as a message.")
    var lines = false

    @Flag(name: [.customShort("n"), .customLong("null-message")], help: "Send a zero-length message.")
    var nullMessage = false

    @Option(name: [.customShort("q"), .long], help: "QoS (0, 1 or 2); chat envelopes default to the chat layer's QoS.")
    var qos: Int?

    @Flag(name: [.customShort("r"), .long], help: "Ask the broker to retain the message.")
    var retain = false

    @Flag(name: [.customShort("d"), .long], help: "Report every publish on stderr.")
    var debug = false

    @Option(name: .customLong("chat-text"), help: "Publish a chat text envelope to --room as --name.")
    var chatText: String?

    @Option(name: .customLong("chat-gift"), help: "Publish a chat gift envelope (NAME or NAME:COUNT) to --room as --name.")
    var chatGift: String?

    @Option(help: "The chat room of --chat-text, --chat-gift or -l.")
    var room: String?

    @Option(help: "The sender's user name in chat envelopes.")
    var name: String?

    @Flag(help: "With -f: the file is a stream of varint-length-prefixed envelopes; publish each to its room (or -t).")
    var delimited = false

    func validate() throws {
        let sources = [message != nil, file != nil, lines, nullMessage, chatText != nil, chatGift != nil]
        guard sources.filter({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of -m, -f, -l, -n, --chat-text, --chat-gift (or --delimited -f FILE)")
        }
        if delimited, file == nil { throw ValidationError("--delimited needs -f FILE") }
        if let qos, !(0...2).contains(qos) { throw ValidationError("-q must be 0, 1 or 2") }
        if let chatGift { _ = try Self.parseGift(chatGift) }
        _ = try flags.mqtt5Properties(for: .publish)
        if isChat {
            guard room != nil, name != nil else { throw ValidationError("chat envelopes need --room and --name") }
            if topic != nil { throw ValidationError("-t cannot be combined with chat envelopes: they go to the room") }
        } else {
            if room != nil || name != nil { throw ValidationError("--room and --name need --chat-text, --chat-gift or -l") }
            if topic == nil, !delimited { throw ValidationError("-t TOPIC is required") }
        }
    }

    /// Whether this run publishes chat envelopes it builds itself.
    private var isChat: Bool { chatText != nil || chatGift != nil || (lines && room != nil) }

    func run() async throws {
        try await CLIFailure.reporting("publish") {
            let plan = try makePlan()
            let properties: MQTT5PropertyFlags
            do throws(ValidationError) { properties = try flags.mqtt5Properties(for: .publish) } catch { throw CLIFailure(.usage, error.message) }
            let client = try await MQTTConnection.open(
                connection, flags, properties: properties, clientID: connection.clientID(defaultPrefix: "mqttchat-pub"),
                reconnect: .disabled)
            let publish = properties.publish
            do {
                switch plan {
                case .messages(let messages):
                    for message in messages { try await send(message, publish, client) }
                case .stdinLines(let makeMessage):
                    for await line in StandardInputLines.stream().lines {
                        try await send(makeMessage(line), publish, client)
                    }
                }
            } catch {
                await client.disconnect()
                throw error
            }
            await client.disconnect()
        }
    }

    /// Publishes `message` with the `-D publish` properties; a refusal (MQTT 5 reason code) ends the run.
    private func send(
        _ message: MQTTMessage, _ properties: MQTTPublishProperties, _ client: MQTTClient
    ) async throws(CLIFailure) {
        do {
            try await client.publish(
                topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain,
                properties: properties)
        } catch {
            throw CLIFailure(
                refused: "Publish to '\(message.topic)'", error, address: connection.address(tls: flags.usesTLS))
        }
        if debug {
            Console.error("Published to \(message.topic) (QoS \(message.qos.rawValue), \(message.payload.count) bytes)")
        }
    }

    // MARK: What to send

    /// What a run publishes: a list known up front, or one message per stdin line.
    private enum Plan {
        case messages([MQTTMessage])
        case stdinLines(@Sendable (String) -> MQTTMessage)
    }

    /// Reads and checks everything before connecting, so bad input fails fast with 65/66.
    private func makePlan() throws(CLIFailure) -> Plan {
        let level = qos.flatMap { QoS(rawValue: UInt8($0)) }
        if delimited, let file {
            return .messages(try delimitedMessages(from: try Self.read(file), qos: level))
        }
        if isChat, let room, let name {
            let roomName = try CLINames.room(room)
            let factory = ChatEnvelopeFactory(
                sender: try CLINames.user(name, what: "--name"), profile: UserProfile(name: name),
                session: UUID().uuidString)
            let topic = ChatTopics.standard.name(of: .roomMessages(roomName))
            let retain = retain
            if let chatText {
                return .messages([try Self.message(factory.text(chatText, in: roomName), topic, level ?? .atLeastOnce, retain)])
            }
            if let chatGift {
                let gift: ChatGift
                do { gift = try Self.parseGift(chatGift) } catch { throw CLIFailure(.usage, "\(error)") }
                return .messages([try Self.message(factory.gift(gift, in: roomName), topic, level ?? .exactlyOnce, retain)])
            }
            return .stdinLines { line in
                let payload = (try? factory.text(line, in: roomName).serializedBytes()) ?? []
                return MQTTMessage(topic: topic, payload: payload, qos: level ?? .atLeastOnce, retain: retain)
            }
        }
        guard let topic else { throw CLIFailure(.usage, "-t TOPIC is required") }
        try Self.checkTopicName(topic)
        let qos = level ?? .atMostOnce
        if lines {
            let retain = retain
            return .stdinLines { MQTTMessage(topic: topic, payload: Array($0.utf8), qos: qos, retain: retain) }
        }
        let payload: [UInt8] =
            if let message { Array(message.utf8) } else if let file { try Self.read(file) } else { [] }
        return .messages([MQTTMessage(topic: topic, payload: payload, qos: qos, retain: retain)])
    }

    /// One MQTT message per envelope of a delimited stream, to `-t` or to the topic the envelope belongs on.
    private func delimitedMessages(from bytes: [UInt8], qos: QoS?) throws(CLIFailure) -> [MQTTMessage] {
        var decoder = EnvelopeStreamDecoder()
        let envelopes: [ProtoEnvelope]
        do { envelopes = try decoder.feed(bytes) } catch {
            throw CLIFailure(.dataError, "\(file ?? "-") is not a stream of length-prefixed envelopes: \(error)")
        }
        guard decoder.bufferedByteCount == 0 else {
            throw CLIFailure(.dataError, "\(file ?? "-") ends in the middle of an envelope")
        }
        if let topic { try Self.checkTopicName(topic) }
        var messages: [MQTTMessage] = []
        for (index, envelope) in envelopes.enumerated() {
            let destination: String
            if let topic { destination = topic } else { destination = try Self.topic(of: envelope, index: index) }
            let payload: [UInt8]
            do { payload = try envelope.serializedBytes() } catch {
                throw CLIFailure(.dataError, "envelope \(index + 1) cannot be encoded")
            }
            messages.append(
                MQTTMessage(topic: destination, payload: payload, qos: qos ?? Self.chatQoS(of: envelope), retain: retain))
        }
        return messages
    }

    /// The topic the chat layer publishes `envelope` on.
    private static func topic(of envelope: ProtoEnvelope, index: Int) throws(CLIFailure) -> String {
        let topics = ChatTopics.standard
        switch envelope.body {
        case .direct(let direct)?:
            return topics.name(of: .inbox(try CLINames.user(direct.recipient, what: "recipient in envelope \(index + 1)")))
        case .status?:
            return topics.name(of: .status(try CLINames.user(envelope.senderID, what: "sender in envelope \(index + 1)")))
        case .join?, .leave?, .text?, .gift?, .heartbeat?, nil:
            guard !envelope.room.isEmpty else {
                throw CLIFailure(.dataError, "envelope \(index + 1) names no room: give -t TOPIC")
            }
            return topics.name(of: .roomMessages(try CLINames.room(envelope.room)))
        }
    }

    /// The QoS the chat layer uses for this kind of envelope.
    private static func chatQoS(of envelope: ProtoEnvelope) -> QoS {
        switch envelope.body {
        case .gift?: .exactlyOnce
        case .heartbeat?: .atMostOnce
        case .join?, .leave?, .text?, .direct?, .status?, nil: .atLeastOnce
        }
    }

    private static func message(_ envelope: ProtoEnvelope, _ topic: String, _ qos: QoS, _ retain: Bool)
        throws(CLIFailure) -> MQTTMessage
    {
        do {
            return MQTTMessage(topic: topic, payload: try envelope.serializedBytes(), qos: qos, retain: retain)
        } catch {
            throw CLIFailure(.dataError, "the chat envelope cannot be encoded")
        }
    }

    /// `NAME` or `NAME:COUNT` with a positive count.
    static func parseGift(_ text: String) throws -> ChatGift {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = parts.first, !name.isEmpty else { throw ValidationError("--chat-gift needs a gift name") }
        guard parts.count == 2 else { return ChatGift(name: String(name)) }
        guard let count = Int32(parts[1]), count > 0 else {
            throw ValidationError("--chat-gift count must be a positive number, got '\(parts[1])'")
        }
        return ChatGift(name: String(name), count: count)
    }

    /// A topic name for PUBLISH: not empty, no wildcards, no U+0000 (MQTT 3.1.1 sections 4.7.1 and 4.7.3).
    static func checkTopicName(_ topic: String) throws(CLIFailure) {
        if topic.isEmpty { throw CLIFailure(.dataError, "invalid topic '': it is empty") }
        if topic.contains("+") || topic.contains("#") {
            throw CLIFailure(.dataError, "invalid topic '\(topic)': wildcards are not allowed when publishing")
        }
        if topic.utf8.contains(0) || topic.utf8.count > 65535 {
            throw CLIFailure(.dataError, "invalid topic '\(topic)'")
        }
    }

    static func read(_ path: String) throws(CLIFailure) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(.noInput, "cannot read file '\(path)'")
        }
        return Array(data)
    }
}
