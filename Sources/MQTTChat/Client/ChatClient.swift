import Foundation
public import MQTTClient
import MQTTCore

/// A chat user on an MQTT broker: rooms as topics, presence, direct messages and local history.
///
/// Delivery guarantees per message type: heartbeats QoS 0; join/leave/text/direct QoS 1, de-duplicated
/// by message id so a redelivered copy is never reported or stored twice; gifts QoS 2 (exactly once).
/// Presence is computed from retained per-member topics and the retained per-user status, whose offline
/// value is the MQTT will, so a killed process disappears from every room (see TOPICS.md).
public actor ChatClient {
    /// The configuration the client was created with.
    public let configuration: ChatClientConfiguration
    /// This user as others see it.
    public nonisolated var me: ChatMember { ChatMember(id: configuration.userID, profile: configuration.profile) }

    private let mqtt: MQTTClient
    /// Opened on the first successful connection (or the first history query), so a client that never reaches
    /// its broker leaves no database file behind.
    private var openedStore: ChatHistoryStore?
    private let envelopes: ChatEnvelopeFactory
    private let interpreter: ChatInboundInterpreter
    private var topics: ChatTopics { configuration.topics }

    private var tracker = PresenceTracker()
    private var deduplicator: MessageDeduplicator
    private var joinedRooms: Set<RoomName> = []
    private var subscribers: [UUID: AsyncStream<ChatEvent>.Continuation] = [:]
    private var tasks: [Task<Void, Never>] = []
    private var isConnected = false
    private var heartbeatSequence: UInt64 = 0
    private var undecodableMessageCount = 0

    /// Prepares the MQTT client (with the offline-status will); does not connect. Local history is opened once
    /// the first connection succeeds.
    public init(configuration: ChatClientConfiguration) throws(ChatError) {
        self.configuration = configuration
        let session = UUID().uuidString
        envelopes = ChatEnvelopeFactory(sender: configuration.userID, profile: configuration.profile, session: session)
        interpreter = ChatInboundInterpreter(topics: configuration.topics, me: configuration.userID)
        deduplicator = MessageDeduplicator(capacity: configuration.deduplicationCapacity)

        var mqttConfiguration = configuration.mqtt
        mqttConfiguration.clientID = configuration.userID.rawValue
        let offline = try Self.encode(envelopes.status(isOnline: false))
        mqttConfiguration.will = MQTTWill(
            topic: configuration.topics.name(of: .status(configuration.userID)), payload: offline, qos: .atLeastOnce,
            retain: true)
        do { mqtt = try MQTTClient(configuration: mqttConfiguration) } catch { throw .mqtt(error) }
    }

    /// The will this client registers: its retained offline status.
    public nonisolated var will: MQTTWill? { mqtt.configuration.will }

    // MARK: Connection

    /// Connects, subscribes to all users' status and to this user's inbox, and publishes "online" (retained).
    public func connect() async throws(ChatError) {
        guard !isConnected else { return }
        startPumps()
        do {
            try await mqtt.connect()
        } catch {
            stopPumps()
            throw .mqtt(error)
        }
        do {
            _ = try historyStore()
        } catch {
            await mqtt.disconnect()
            stopPumps()
            throw error
        }
        do {
            try await mqtt.subscribe(topics.allStatusesFilter, qos: .atLeastOnce)
            try await mqtt.subscribe(topics.name(of: .inbox(configuration.userID)), qos: .atLeastOnce)
        } catch {
            stopPumps()
            throw .mqtt(error)
        }
        isConnected = true
        try await publishStatus(isOnline: true)
        if let interval = configuration.heartbeatInterval { startHeartbeats(every: interval) }
    }

    /// Goes offline gracefully: publishes "offline", clears this user's memberships, and disconnects.
    public func disconnect() async {
        guard isConnected else { return }
        // Only while connected: a QoS 1 publish made while reconnecting would wait for the reconnect.
        // Without a connection the broker has published (or will publish) our offline will anyway.
        if case .connected? = mqtt.state {
            try? await publishStatus(isOnline: false)
            for room in joinedRooms {
                try? await mqtt.publish(
                    topic: topics.name(of: .roomMember(room, configuration.userID)), payload: [], qos: .atLeastOnce,
                    retain: true)
            }
        }
        joinedRooms.removeAll()
        isConnected = false
        await mqtt.disconnect()
        stopPumps()
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }

    // MARK: Rooms

    /// Joins `room`: subscribes to its traffic and members, publishes the retained membership, announces the join.
    public func join(_ room: RoomName) async throws(ChatError) {
        guard isConnected else { throw .notConnected }
        guard !joinedRooms.contains(room) else { return }
        // Inserted first: retained memberships arrive as soon as the broker has the subscription.
        joinedRooms.insert(room)
        do {
            try await mqtt.subscribe(topics.name(of: .roomMessages(room)), qos: .exactlyOnce)
            try await mqtt.subscribe(topics.membersFilter(of: room), qos: .atLeastOnce)
        } catch {
            joinedRooms.remove(room)
            throw .mqtt(error)
        }
        let join = envelopes.join(room)
        let payload = try Self.encode(join)
        _ = deduplicator.markSeen(join.messageID)
        try await publish(topic: topics.name(of: .roomMember(room, configuration.userID)), payload, .atLeastOnce, retain: true)
        try await publish(topic: topics.name(of: .roomMessages(room)), payload, .atLeastOnce)
    }

    /// Leaves `room`: announces it, clears the retained membership, and unsubscribes.
    public func leave(_ room: RoomName) async throws(ChatError) {
        guard joinedRooms.contains(room) else { throw .notJoined(room) }
        let leave = envelopes.leave(room)
        _ = deduplicator.markSeen(leave.messageID)
        try await publish(topic: topics.name(of: .roomMessages(room)), try Self.encode(leave), .atLeastOnce)
        try await publish(topic: topics.name(of: .roomMember(room, configuration.userID)), [], .atLeastOnce, retain: true)
        joinedRooms.remove(room)
        do {
            try await mqtt.unsubscribe(topics.name(of: .roomMessages(room)))
            try await mqtt.unsubscribe(topics.membersFilter(of: room))
        } catch {
            throw .mqtt(error)
        }
        tracker.forget(room: room)
    }

    /// The rooms this client has joined.
    public var rooms: [RoomName] { joinedRooms.sorted() }

    /// Who is present in `room` right now (only known for joined rooms), sorted by id.
    public func members(of room: RoomName) -> [ChatMember] { tracker.members(of: room) }

    /// Whether `user`'s retained status says online (known for every user while connected); `nil` when the
    /// broker holds no status for that user id, i.e. it never chatted here.
    public func isOnline(_ user: UserID) -> Bool? { tracker.isOnline(user) }

    // MARK: Sending

    /// Sends a line of text to a joined room (QoS 1) and stores it in history.
    @discardableResult
    public func send(text: String, in room: RoomName) async throws(ChatError) -> ChatMessageRecord {
        guard joinedRooms.contains(room) else { throw .notJoined(room) }
        return try await sendStored(envelopes.text(text, in: room), to: topics.name(of: .roomMessages(room)), .atLeastOnce)
    }

    /// Sends a gift to a joined room (QoS 2, exactly once) and stores it in history.
    @discardableResult
    public func sendGift(name: String, count: Int32 = 1, url: String = "", in room: RoomName) async throws(ChatError)
        -> ChatMessageRecord
    {
        guard joinedRooms.contains(room) else { throw .notJoined(room) }
        let gift = envelopes.gift(ChatGift(name: name, count: count, url: url), in: room)
        return try await sendStored(gift, to: topics.name(of: .roomMessages(room)), .exactlyOnce)
    }

    /// Sends a private message to `recipient`'s inbox (QoS 1) and stores it in history.
    @discardableResult
    public func sendDirect(text: String, to recipient: UserID) async throws(ChatError) -> ChatMessageRecord {
        guard isConnected else { throw .notConnected }
        return try await sendStored(envelopes.direct(text, to: recipient), to: topics.name(of: .inbox(recipient)), .atLeastOnce)
    }

    // MARK: Events and history

    /// A new stream of everything that happens from now on; it ends on ``disconnect()``.
    public func events() -> AsyncStream<ChatEvent> {
        let (stream, continuation) = AsyncStream<ChatEvent>.makeStream()
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.removeSubscriber(id) }
        }
        return stream
    }

    /// The last `limit` messages of `room` this client sent or received, newest last.
    public func history(room: RoomName, limit: Int = 50) throws(ChatError) -> [ChatMessageRecord] {
        let store = try historyStore()
        do { return try store.history(room: room, limit: limit) } catch { throw .history(error) }
    }

    /// The last `limit` direct messages exchanged with `peer`, newest last.
    public func directMessages(with peer: UserID, limit: Int = 50) throws(ChatError) -> [ChatMessageRecord] {
        let store = try historyStore()
        do { return try store.directMessages(with: peer, limit: limit) } catch { throw .history(error) }
    }

    /// How many received messages were dropped because they were not valid chat messages.
    public var droppedMessageCount: Int { undecodableMessageCount }

    // MARK: Internals

    private func removeSubscriber(_ id: UUID) { subscribers[id] = nil }

    /// The history store, opened (and its file created) on first use.
    private func historyStore() throws(ChatError) -> ChatHistoryStore {
        if let openedStore { return openedStore }
        do {
            let store = try ChatHistoryStore(location: configuration.history)
            openedStore = store
            return store
        } catch {
            throw .history(error)
        }
    }

    private func emit(_ event: ChatEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    private func sendStored(_ envelope: ProtoEnvelope, to topic: String, _ qos: QoS) async throws(ChatError)
        -> ChatMessageRecord
    {
        let payload = try Self.encode(envelope)
        guard let record = ChatMessageRecord(sent: envelope, by: me) else { throw .encodingFailed }
        _ = deduplicator.markSeen(envelope.messageID)  // our own copy comes back from the broker: ignore it
        try await publish(topic: topic, payload, qos)
        let store = try historyStore()
        do { try store.store(record) } catch { throw .history(error) }
        return record
    }

    private func publish(topic: String, _ payload: [UInt8], _ qos: QoS, retain: Bool = false) async throws(ChatError) {
        do { try await mqtt.publish(topic: topic, payload: payload, qos: qos, retain: retain) } catch {
            throw .mqtt(error)
        }
    }

    private func publishStatus(isOnline: Bool) async throws(ChatError) {
        let status = try Self.encode(envelopes.status(isOnline: isOnline))
        try await publish(topic: topics.name(of: .status(configuration.userID)), status, .atLeastOnce, retain: true)
    }

    private static func encode(_ envelope: ProtoEnvelope) throws(ChatError) -> [UInt8] {
        do { return try envelope.serializedBytes() } catch { throw .encodingFailed }
    }

    private func startPumps() {
        let messages = mqtt.messages()
        let states = mqtt.stateChanges()
        tasks.append(
            Task { [weak self] in
                for await message in messages { await self?.handle(message) }
            })
        tasks.append(
            Task { [weak self] in
                var connections = 0
                for await state in states {
                    if case .connected = state {
                        connections += 1
                        if connections > 1 { await self?.didReconnect() }
                    }
                    await self?.emit(.connection(state))
                }
            })
    }

    private func stopPumps() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
    }

    /// After a reconnect the broker may have published our will: say we are online again (same session,
    /// so our retained memberships count again). Subscriptions are restored by the MQTT client.
    private func didReconnect() async {
        guard isConnected else { return }
        try? await publishStatus(isOnline: true)
    }

    private func startHeartbeats(every interval: Duration) {
        tasks.append(
            Task { [weak self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: interval) } catch { return }
                    guard let self else { return }
                    await self.sendHeartbeats()
                }
            })
    }

    private func sendHeartbeats() async {
        heartbeatSequence &+= 1
        for room in joinedRooms {
            guard let payload = try? Self.encode(envelopes.heartbeat(sequence: heartbeatSequence, in: room)) else { continue }
            // QoS 0: a lost heartbeat is simply late; failures while offline are expected.
            try? await mqtt.publish(topic: topics.name(of: .roomMessages(room)), payload: payload, qos: .atMostOnce)
        }
    }

    private func handle(_ message: MQTTMessage) {
        let inbound: ChatInbound
        do { inbound = try interpreter.interpret(topic: message.topic, payload: message.payload) } catch {
            undecodableMessageCount += 1
            return
        }
        switch inbound {
        case .presence(let input):
            if case .membership(let room, _, _, _) = input, !joinedRooms.contains(room) { return }
            for change in tracker.apply(input) { emit(.presenceChanged(change)) }
        case .joinAnnouncement(let room, let member, let id):
            guard deduplicator.markSeen(id) else { return }
            emit(.joined(room: room, member: member))
        case .leaveAnnouncement(let room, let member, let id):
            guard deduplicator.markSeen(id) else { return }
            emit(.left(room: room, member: member))
        case .message(let record):
            guard deduplicator.markSeen(record.id) else { return }
            // A history failure must not hide the message from the application.
            _ = try? historyStore().store(record)
            switch (record.conversation, record.content) {
            case (.direct, _): emit(.directMessage(record))
            case (.room, .text): emit(.text(record))
            case (.room, .gift): emit(.gift(record))
            }
        case .heartbeat:
            return
        }
    }
}
