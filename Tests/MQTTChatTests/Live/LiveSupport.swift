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
func makeChatClient(_ id: String, name: String, port: Int, heartbeat: Duration? = nil, reconnect: Bool = true)
    throws -> ChatClient
{
    var configuration = ChatClientConfiguration(
        userID: try UserID(id), profile: UserProfile(name: name, level: 5, iconURL: "icon-\(id)"), port: port)
    configuration.history = .inMemory
    configuration.heartbeatInterval = heartbeat
    configuration.mqtt.keepAlive = .seconds(5)
    configuration.mqtt.reconnect =
        reconnect ? .exponential(initial: .milliseconds(100), maximum: .seconds(1), jitter: false) : .disabled
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
        case .joined, .left, .presenceChanged, .connection: nil
        }
    }
}
