import Foundation
import LiveTestSupport
import MQTTChat
import MQTTClient

/// Collects a ChatClient's events so a test can wait (bounded) for one.
actor EventCollector {
    private(set) var events: [ChatEvent] = []
    private var task: Task<Void, Never>?

    init(_ client: ChatClient) async {
        let stream = await client.events()
        task = Task { [weak self] in
            for await event in stream { await self?.append(event) }
        }
    }

    private func append(_ event: ChatEvent) { events.append(event) }

    /// Waits until an event matches (up to `timeout`) and returns it, or `nil` on timeout.
    func first(timeout: Duration = .seconds(5), where matches: @Sendable (ChatEvent) -> Bool) async -> ChatEvent? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let event = events.first(where: matches) { return event }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return events.first(where: matches)
    }

    /// How many collected events match.
    func count(where matches: @Sendable (ChatEvent) -> Bool) -> Int { events.filter(matches).count }

    func stop() { task?.cancel() }
}

/// Waits (bounded) until `condition` holds.
func eventually(timeout: Duration = .seconds(5), _ condition: @Sendable () async -> Bool) async -> Bool {
    (try? await poll(every: .milliseconds(20), for: timeout) { await condition() }) ?? false
}

/// A chat client for a test broker: in-memory history, no heartbeats unless asked, no reconnect surprises.
func makeChatClient(
    _ id: String, name: String, port: Int, heartbeat: Duration? = nil, reconnect: Bool = true,
    configure: (inout ChatClientConfiguration) -> Void = { _ in }
) throws -> ChatClient {
    var configuration = ChatClientConfiguration(
        userID: try UserID(id), profile: UserProfile(name: name, level: 5, iconURL: "icon-\(id)"), port: port)
    configuration.history = .inMemory
    configuration.heartbeatInterval = heartbeat
    configuration.mqtt.keepAlive = .seconds(5)
    configuration.mqtt.reconnect =
        reconnect ? .exponential(initial: .milliseconds(100), maximum: .seconds(1), jitter: false) : .disabled
    configure(&configuration)
    return try ChatClient(configuration: configuration)
}

extension ChatEvent {
    var presence: PresenceChange? {
        if case .presenceChanged(let change) = self { return change }
        return nil
    }

    var record: ChatMessageRecord? {
        switch self {
        case .text(let record), .gift(let record), .directMessage(let record): record
        case .joined, .left, .presenceChanged, .connection, .historyMerged: nil
        }
    }
}

/// Every message a plain MQTT client receives, kept for a test to look at.
actor ReceivedMessages {
    private var all: [MQTTMessage] = []
    private var task: Task<Void, Never>?

    /// Starts collecting `client`'s messages (call before subscribing).
    init(_ client: MQTTClient) async {
        let stream = client.messages()
        task = Task { [weak self] in
            for await message in stream { await self?.append(message) }
        }
    }

    private func append(_ message: MQTTMessage) { all.append(message) }

    /// The envelope types received, in order (messages that are not envelopes are left out).
    func types(on topic: String? = nil) -> [ProtoMessageType] {
        all.filter { topic == nil || $0.topic == topic }.compactMap { message in
            message.payload.isEmpty ? nil : (try? ProtoEnvelope(serializedBytes: message.payload))?.type
        }
    }

    /// The received messages whose envelope has `type`.
    func messages(of type: ProtoMessageType) -> [MQTTMessage] {
        all.filter { !$0.payload.isEmpty && (try? ProtoEnvelope(serializedBytes: $0.payload))?.type == type }
    }

    func stop() { task?.cancel() }
}

/// A plain MQTT 5 client on `port`; with `sessionExpiry` it keeps (and resumes) a persistent session.
func rawV5Client(_ id: String, port: Int, sessionExpiry: UInt32? = nil) throws -> MQTTClient {
    var configuration = MQTTClientConfiguration(clientID: id, port: port)
    configuration.protocolVersion = .v5
    configuration.keepAlive = .seconds(5)
    configuration.reconnect = .disabled
    if let sessionExpiry {
        configuration.cleanSession = false
        configuration.sessionExpiryInterval = sessionExpiry
    }
    return try MQTTClient(configuration: configuration)
}
