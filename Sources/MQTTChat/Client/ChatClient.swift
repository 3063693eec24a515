import Foundation
public import MQTTClient
import MQTTCore

/// A chat user on an MQTT broker: rooms as topics, presence, direct messages and local history.
///
/// Delivery guarantees per message type: heartbeats QoS 0; join/leave/text/direct QoS 1, de-duplicated
/// by message id so a redelivered copy is never reported or stored twice; gifts QoS 2 (exactly once).
/// Presence is by heartbeat: every member announces itself on join and periodically, answers a newcomer's JOIN
/// ("who is here?") and is dropped after 3 missed heartbeats, or at once by its will (the offline status). Retained
/// memberships and statuses are only a cache for a fast first view, so the chat also works on a clustered broker
/// whose nodes do not share retained messages (see TOPICS.md).
///
/// It speaks MQTT 5 when the broker offers it (No Local on rooms, envelope properties, message expiry, an inbox
/// session, room history from a ``RoomHistoryService``) and MQTT 3.1.1 when the broker refuses it.
public actor ChatClient {
    /// The configuration the client was created with.
    public let configuration: ChatClientConfiguration
    /// This user as others see it.
    public nonisolated var me: ChatMember { ChatMember(id: configuration.userID, profile: configuration.profile) }

    /// The MQTT client; replaced once by a 3.1.1 one when the broker refuses MQTT 5.
    var mqtt: MQTTClient
    /// Whether this client speaks MQTT 5 (until a broker refuses it).
    var usesMQTT5: Bool
    /// Set when the broker refused MQTT 5 and the client fell back to 3.1.1.
    var refusedMQTT5 = false
    /// Whether the broker refused MQTT 5 and the client fell back to 3.1.1.
    public var fellBackToMQTT311: Bool { refusedMQTT5 }
    /// The offline status, the will's payload.
    let offlineStatus: [UInt8]
    /// Opened on the first successful connection (or the first history query), so a client that never reaches
    /// its broker leaves no database file behind.
    var openedStore: ChatHistoryStore?
    let envelopes: ChatEnvelopeFactory
    let interpreter: ChatInboundInterpreter
    var topics: ChatTopics { configuration.topics }

    var tracker: PresenceTracker
    /// When to heartbeat in which room; `nil` when ``ChatClientConfiguration/heartbeatInterval`` is `nil`.
    var heartbeatSchedule: HeartbeatSchedule?
    /// Answers to a 3.1.1 "who is here?" waiting for their random delay, one per room.
    var pendingAnswers: [RoomName: Task<Void, Never>] = [:]
    var deduplicator: MessageDeduplicator
    var joinedRooms: Set<RoomName> = []
    var subscribers: [UUID: AsyncStream<ChatEvent>.Continuation] = [:]
    var tasks: [Task<Void, Never>] = []
    var isConnected = false
    var heartbeatSequence: UInt64 = 0
    var undecodableMessageCount = 0
    var echoedOwnMessageCount = 0

    /// Prepares the MQTT client (with the offline-status will); does not connect. Local history is opened once
    /// the first connection succeeds.
    public init(configuration: ChatClientConfiguration) throws(ChatError) {
        self.configuration = configuration
        let session = UUID().uuidString
        envelopes = ChatEnvelopeFactory(sender: configuration.userID, profile: configuration.profile, session: session)
        interpreter = ChatInboundInterpreter(topics: configuration.topics, me: configuration.userID)
        deduplicator = MessageDeduplicator(capacity: configuration.deduplicationCapacity)
        tracker = PresenceTracker(defaultInterval: configuration.heartbeatInterval)
        heartbeatSchedule = configuration.heartbeatInterval.map { HeartbeatSchedule(base: $0) }
        offlineStatus = try Self.encode(envelopes.status(isOnline: false))
        usesMQTT5 = configuration.mqtt.protocolVersion == .v5
        mqtt = try Self.makeMQTTClient(configuration, offlineStatus: offlineStatus, mqtt5: usesMQTT5)
        will = mqtt.configuration.will
    }

    /// The will this client registers: its retained offline status (with the envelope's MQTT 5 properties, which a
    /// fallback to 3.1.1 leaves out).
    public nonisolated let will: MQTTWill?

    /// The MQTT protocol version this client speaks: MQTT 5 unless configured otherwise or the broker refused it.
    public var protocolVersion: MQTTClientProtocolVersion { mqtt.configuration.protocolVersion }

    /// What the broker answered in the CONNACK of the current (or last) connection; `nil` before the first one.
    public var connAck: MQTTConnAckInfo? { mqtt.connAck }

    // MARK: Rooms

    /// Joins `room`: subscribes to its traffic (MQTT 5: with No Local, so this client's own messages are not sent
    /// back) and members, publishes the retained membership (a cache), announces the join, which also asks
    /// "who is here?" (at MQTT 5 answered on this user's presence reply topic). At MQTT 5 it then asks a room
    /// history service, in the background, for the messages it missed (see ``fetchRoomHistory(_:timeout:)``).
    public func join(_ room: RoomName) async throws(ChatError) {
        guard isConnected else { throw .notConnected }
        guard !joinedRooms.contains(room) else { return }
        // Before subscribing: what arrives once joined is newer than what a history service should send.
        let historySince = usesMQTT5 && configuration.roomHistoryTimeout != nil ? try newestInHistory(room) : 0
        // Inserted first: retained memberships arrive as soon as the broker has the subscription.
        joinedRooms.insert(room)
        do {
            let options = usesMQTT5 ? MQTTSubscribeOptions(noLocal: true) : MQTTSubscribeOptions()
            _ = try await mqtt.subscribe(topics.name(of: .roomMessages(room)), qos: .exactlyOnce, options: options)
            try await mqtt.subscribe(topics.membersFilter(of: room), qos: .atLeastOnce)
        } catch {
            joinedRooms.remove(room)
            throw .mqtt(error)
        }
        let join = envelopes.join(room)
        let payload = try Self.encode(join)
        _ = deduplicator.markSeen(join.messageID)
        try await publish(topic: topics.name(of: .roomMember(room, configuration.userID)), payload, .atLeastOnce, retain: true)
        hearMyself(in: room, interval: heartbeatInterval(in: room))
        try await publish(
            topic: topics.name(of: .roomMessages(room)), payload, .atLeastOnce, expiry: configuration.ephemeralMessageExpiry,
            responseTopic: whoIsHereResponseTopic, correlation: Array(join.messageID.utf8))
        if usesMQTT5, let timeout = configuration.roomHistoryTimeout {
            startHistoryFetch(room, since: historySince, timeout: timeout)
        }
    }

    /// Leaves `room`: announces it, clears the retained membership, and unsubscribes.
    public func leave(_ room: RoomName) async throws(ChatError) {
        guard joinedRooms.contains(room) else { throw .notJoined(room) }
        let leave = envelopes.leave(room)
        _ = deduplicator.markSeen(leave.messageID)
        try await publish(
            topic: topics.name(of: .roomMessages(room)), try Self.encode(leave), .atLeastOnce,
            expiry: configuration.ephemeralMessageExpiry)
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

    /// Whether `user` is online: heard live in a joined room, or its latest status says so (statuses are known for
    /// every user while connected). `nil` when neither is known, i.e. it never chatted here (or, on a clustered
    /// broker, it is connected to another node and shares no room with this user).
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

    /// Sends a private message to `recipient`'s inbox (QoS 1) and stores it in history. At MQTT 5 it expires after
    /// ``ChatClientConfiguration/directMessageRetention`` if the recipient's session has not received it by then.
    @discardableResult
    public func sendDirect(text: String, to recipient: UserID) async throws(ChatError) -> ChatMessageRecord {
        guard isConnected else { throw .notConnected }
        return try await sendStored(
            envelopes.direct(text, to: recipient), to: topics.name(of: .inbox(recipient)), .atLeastOnce,
            expiry: configuration.directMessageRetention)
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

    /// How many of this client's own room messages (joins, leaves, texts, gifts, heartbeats) the broker sent back
    /// to it. At MQTT 3.1.1 every one comes back and is dropped here; at MQTT 5 the room subscriptions ask for
    /// No Local, so this stays 0.
    public var ownMessagesReceivedBack: Int { echoedOwnMessageCount }

    // MARK: Internals

    private func removeSubscriber(_ id: UUID) { subscribers[id] = nil }

    /// The history store, opened (and its file created) on first use.
    func historyStore() throws(ChatError) -> ChatHistoryStore {
        if let openedStore { return openedStore }
        do {
            let store = try ChatHistoryStore(location: configuration.history)
            openedStore = store
            return store
        } catch {
            throw .history(error)
        }
    }

    func emit(_ event: ChatEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    private func sendStored(_ envelope: ProtoEnvelope, to topic: String, _ qos: QoS, expiry: UInt32? = nil)
        async throws(ChatError) -> ChatMessageRecord
    {
        let payload = try Self.encode(envelope)
        guard let record = ChatMessageRecord(sent: envelope, by: me) else { throw .encodingFailed }
        // At MQTT 3.1.1 our own copy comes back from the broker: ignore it.
        _ = deduplicator.markSeen(envelope.messageID)
        try await publish(topic: topic, payload, qos, expiry: expiry)
        let store = try historyStore()
        do { try store.store(record) } catch { throw .history(error) }
        return record
    }

    static func encode(_ envelope: ProtoEnvelope) throws(ChatError) -> [UInt8] {
        do { return try envelope.serializedBytes() } catch { throw .encodingFailed }
    }

    func handle(_ message: MQTTMessage) async {
        let inbound: ChatInbound
        do { inbound = try interpreter.interpret(topic: message.topic, payload: message.payload) } catch {
            undecodableMessageCount += 1
            return
        }
        if case let (room, sender)? = inbound.roomAndSender {
            if sender == configuration.userID { echoedOwnMessageCount += 1 }
            // A resumed MQTT 5 session may still hold the subscription of a room a crashed process had joined.
            guard joinedRooms.contains(room) else { return }
        }
        switch inbound {
        case .presence(let input):
            if case .membership(let room, _, _, _) = input, !joinedRooms.contains(room) { return }
            applyPresence(input, retained: message.retain)
        case .joinAnnouncement(let room, let member, let session, let id):
            guard deduplicator.markSeen(id) else { return }
            emit(.joined(room: room, member: member))
            applyPresence(.heard(room: room, user: member.id, session: session, profile: member.profile, interval: nil))
            await answerWhoIsHere(in: room, newcomer: member.id, request: message)
        case .leaveAnnouncement(let room, let member, let id):
            guard deduplicator.markSeen(id) else { return }
            emit(.left(room: room, member: member))
            // Live, so it works where the retained membership's clearing is not replayed (a clustered broker).
            applyPresence(.membershipCleared(room: room, user: member.id))
        case .message(let record):
            guard deduplicator.markSeen(record.id) else { return }
            // A history failure must not hide the message from the application.
            _ = try? historyStore().store(record)
            switch (record.conversation, record.content) {
            case (.direct, _): emit(.directMessage(record))
            case (.room, .text): emit(.text(record))
            case (.room, .gift): emit(.gift(record))
            }
        case .heartbeat(let room, let sender, let session, let interval, _):
            applyPresence(.heard(room: room, user: sender.id, session: session, profile: sender.profile, interval: interval))
        }
    }
}

extension ChatInbound {
    /// The room and sender of room traffic (announcements, texts, gifts, heartbeats); `nil` for everything else.
    var roomAndSender: (RoomName, UserID)? {
        switch self {
        case .joinAnnouncement(let room, let member, _, _), .leaveAnnouncement(let room, let member, _):
            return (room, member.id)
        case .message(let record):
            guard case .room(let room) = record.conversation else { return nil }
            return (room, record.sender.id)
        case .heartbeat(let room, let sender, _, _, _):
            return (room, sender.id)
        case .presence:
            return nil
        }
    }
}
