import Foundation
public import MQTTClient
import MQTTCore

/// Everything a ``RoomHistoryService`` needs before it starts.
public struct RoomHistoryServiceConfiguration: Sendable {
    /// MQTT settings; the protocol version is always MQTT 5 (request/response needs it).
    public var mqtt: MQTTClientConfiguration
    /// The rooms whose traffic the service keeps and whose history requests it answers.
    public var rooms: [RoomName]
    /// How many of the newest texts and gifts are kept per room (and at most answered per request).
    public var capacity: Int
    /// The topic layout.
    public var topics: ChatTopics

    /// A service with MQTT client id `clientID` on the broker at `host:port`, keeping the last `capacity` messages of
    /// each of `rooms`.
    public init(clientID: String, rooms: [RoomName], capacity: Int = 100, host: String = "127.0.0.1", port: Int = 1883) {
        var mqtt = MQTTClientConfiguration(clientID: clientID, host: host, port: port)
        mqtt.keepAlive = .seconds(30)
        self.mqtt = mqtt
        self.rooms = rooms
        self.capacity = capacity
        topics = .standard
    }
}

/// An optional helper for late joiners: it watches some rooms, keeps the last N texts and gifts of each, and answers
/// a joining ``ChatClient``'s MQTT 5 request "messages since X" (``RoomHistoryQuery`` on
/// ``ChatTopics/historyRequests(of:)``, answered on the request's Response Topic with its Correlation Data).
///
/// History stays on the clients, which merge the answer into their own; the service holds its window in memory
/// only, and clients work without it. Requests for rooms it does not watch are left to other services (it does not
/// answer them).
public actor RoomHistoryService {
    /// The configuration the service was created with.
    public let configuration: RoomHistoryServiceConfiguration
    private let mqtt: MQTTClient
    private let interpreter: ChatInboundInterpreter
    private var buffers: [RoomName: RoomMessageBuffer] = [:]
    private var roomsByMessageTopic: [String: RoomName] = [:]
    private var roomsByRequestTopic: [String: RoomName] = [:]
    private var pump: Task<Void, Never>?
    private var answered = 0

    /// Prepares the MQTT 5 client; does not connect.
    public init(configuration: RoomHistoryServiceConfiguration) throws(ChatError) {
        self.configuration = configuration
        var mqttConfiguration = configuration.mqtt
        mqttConfiguration.protocolVersion = .v5
        do { mqtt = try MQTTClient(configuration: mqttConfiguration) } catch { throw .mqtt(error) }
        // The service's own id is never a chat sender, so every record reads as received.
        interpreter = ChatInboundInterpreter(
            topics: configuration.topics, me: (try? UserID(configuration.mqtt.clientID)) ?? Self.placeholderID)
        for room in configuration.rooms {
            buffers[room] = RoomMessageBuffer(capacity: configuration.capacity)
            roomsByMessageTopic[configuration.topics.name(of: .roomMessages(room))] = room
            roomsByRequestTopic[configuration.topics.historyRequests(of: room)] = room
        }
    }

    private static let placeholderID: UserID = {
        guard let id = try? UserID("room-history-service") else { preconditionFailure("a valid literal user id") }
        return id
    }()

    /// Connects and subscribes to the rooms' traffic (QoS 2) and history requests (QoS 1).
    /// - Throws: `.mqtt(.unacceptableProtocolVersion)` when the broker does not speak MQTT 5, or another
    ///   connection or subscription failure.
    public func start() async throws(ChatError) {
        guard pump == nil else { return }
        let messages = mqtt.messages()
        pump = Task { [weak self] in
            for await message in messages { await self?.handle(message) }
        }
        do {
            try await mqtt.connect()
            for room in configuration.rooms {
                try await mqtt.subscribe(configuration.topics.name(of: .roomMessages(room)), qos: .exactlyOnce)
                try await mqtt.subscribe(configuration.topics.historyRequests(of: room), qos: .atLeastOnce)
            }
        } catch {
            pump?.cancel()
            pump = nil
            await mqtt.disconnect()
            throw .mqtt(error)
        }
    }

    /// Disconnects; the kept messages are forgotten with the service.
    public func stop() async {
        pump?.cancel()
        pump = nil
        await mqtt.disconnect()
    }

    /// How many messages of `room` are kept right now.
    public func keptMessageCount(in room: RoomName) -> Int { buffers[room]?.entries.count ?? 0 }

    /// How many history requests were answered.
    public var answeredRequestCount: Int { answered }

    private func handle(_ message: MQTTMessage) async {
        if let room = roomsByMessageTopic[message.topic] {
            keep(message, in: room)
        } else if let room = roomsByRequestTopic[message.topic] {
            await answer(message, for: room)
        }
    }

    /// Keeps texts and gifts that are valid for the room; everything else on the topic is not history.
    private func keep(_ message: MQTTMessage, in room: RoomName) {
        guard case .message(let record)? = try? interpreter.interpret(topic: message.topic, payload: message.payload),
            record.conversation == .room(room)
        else { return }
        let sentAtMs = Int64((record.sentAt.timeIntervalSince1970 * 1000).rounded())
        buffers[room]?.append(RoomMessageBuffer.Entry(id: record.id, sentAtMs: sentAtMs, bytes: message.payload))
    }

    private func answer(_ request: MQTTMessage, for room: RoomName) async {
        guard request.properties.responseTopic != nil, let buffer = buffers[room] else { return }
        let query = RoomHistoryQuery(properties: request.properties, defaultLimit: configuration.capacity)
        let entries = buffer.select(query)
        var payload: [UInt8] = []
        for entry in entries { payload += EnvelopeStreamDecoder.frame(serializedEnvelope: entry.bytes) }
        do {
            try await mqtt.respond(
                to: request, payload: payload, qos: .atLeastOnce,
                properties: ChatWireProperties.historyResponse(count: entries.count))
            answered += 1
        } catch {
            return  // the requester may be gone; it times out and goes on without the service
        }
    }
}
