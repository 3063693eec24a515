import Foundation
import MQTTClient
import MQTTCore

extension ChatClient {
    // MARK: Connection

    /// Connects, subscribes to all users' status and to this user's inbox, and publishes "online" (retained).
    ///
    /// It speaks MQTT 5 unless configured otherwise. When the broker refuses MQTT 5 (CONNACK 0x84, or 1 from an
    /// MQTT 3.1.1 broker) it connects again at 3.1.1, once, and stays at 3.1.1 from then on
    /// (``fellBackToMQTT311``): no properties, no No Local, no session expiry, no room history requests.
    public func connect() async throws(ChatError) {
        guard !isConnected else { return }
        startPumps()
        do {
            try await mqtt.connect()
        } catch .unacceptableProtocolVersion where usesMQTT5 {
            stopPumps()
            try await fallBackToMQTT311()
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
            // Answers to our MQTT 5 "who is here?" (heartbeats, QoS 0): subscribed before any JOIN asks.
            if let replies = whoIsHereResponseTopic { try await mqtt.subscribe(replies, qos: .atMostOnce) }
        } catch {
            stopPumps()
            throw .mqtt(error)
        }
        isConnected = true
        try await publishStatus(isOnline: true)
        startPresenceLoops()
    }

    /// Goes offline gracefully: publishes "offline", clears this user's memberships, and disconnects.
    ///
    /// With an MQTT 5 inbox session it also unsubscribes from its rooms and from the statuses first, so the session
    /// the broker keeps (``ChatClientConfiguration/inboxSessionExpiry``) queues direct messages only.
    public func disconnect() async {
        guard isConnected else { return }
        // Only while connected: a QoS 1 publish made while reconnecting would wait for the reconnect.
        // Without a connection the broker has published (or will publish) our offline will anyway.
        if case .connected? = mqtt.state {
            try? await publishStatus(isOnline: false)
            for room in joinedRooms {
                try? await publish(topic: topics.name(of: .roomMember(room, configuration.userID)), [], .atLeastOnce, retain: true)
            }
            if keepsSession {
                for room in joinedRooms {
                    try? await mqtt.unsubscribe(topics.name(of: .roomMessages(room)))
                    try? await mqtt.unsubscribe(topics.membersFilter(of: room))
                }
                try? await mqtt.unsubscribe(topics.allStatusesFilter)
                if let replies = whoIsHereResponseTopic { try? await mqtt.unsubscribe(replies) }
            }
        }
        joinedRooms.removeAll()
        isConnected = false
        await mqtt.disconnect()
        stopPumps()
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }

    /// Whether the broker keeps this user's session (its inbox) after the connection ends.
    var keepsSession: Bool { usesMQTT5 && configuration.inboxSessionExpiry != nil }

    /// Replaces the MQTT 5 client by a 3.1.1 one and connects it.
    private func fallBackToMQTT311() async throws(ChatError) {
        usesMQTT5 = false
        refusedMQTT5 = true
        mqtt = try Self.makeMQTTClient(configuration, offlineStatus: offlineStatus, mqtt5: false)
        startPumps()
        do { try await mqtt.connect() } catch {
            stopPumps()
            throw .mqtt(error)
        }
    }

    /// The MQTT client for `configuration`: client id, inbox and will of the user, and at MQTT 5 the inbox session.
    static func makeMQTTClient(_ configuration: ChatClientConfiguration, offlineStatus: [UInt8], mqtt5: Bool)
        throws(ChatError) -> MQTTClient
    {
        var mqtt = configuration.mqtt
        mqtt.clientID = configuration.userID.rawValue
        mqtt.inboxTopic = configuration.topics.name(of: .inbox(configuration.userID))
        var will = MQTTWill(
            topic: configuration.topics.name(of: .status(configuration.userID)), payload: offlineStatus,
            qos: .atLeastOnce, retain: true)
        if mqtt5 {
            mqtt.protocolVersion = .v5
            will.properties = ChatWireProperties.envelope()
            if let expiry = configuration.inboxSessionExpiry {
                mqtt.cleanSession = false
                mqtt.sessionExpiryInterval = expiry
            }
        } else {
            if mqtt.protocolVersion == .v5 { mqtt.protocolVersion = .v3_1_1 }
            mqtt.sessionExpiryInterval = nil
        }
        mqtt.will = will
        do { return try MQTTClient(configuration: mqtt) } catch { throw .mqtt(error) }
    }

    // MARK: Publishing

    /// Publishes `payload`; at MQTT 5 an envelope (any non-empty payload) carries ``ChatWireProperties`` and, if
    /// given, expires after `expiry` seconds and asks for answers on `responseTopic` with `correlation`.
    func publish(
        topic: String, _ payload: [UInt8], _ qos: QoS, retain: Bool = false, expiry: UInt32? = nil,
        responseTopic: String? = nil, correlation: [UInt8]? = nil
    ) async throws(ChatError) {
        var properties =
            usesMQTT5 && !payload.isEmpty ? ChatWireProperties.envelope(expiry: expiry) : MQTTPublishProperties()
        if usesMQTT5, let responseTopic {
            properties.responseTopic = responseTopic
            properties.correlationData = correlation
        }
        // A broker without retained messages (MQTT 5 CONNACK "retain available" 0) would close the connection on a
        // retained PUBLISH; presence does not need the retained cache, so it is simply not written there.
        let retain = retain && mqtt.connAck?.retainAvailable != false
        do {
            try await mqtt.publish(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)
        } catch {
            throw .mqtt(error)
        }
    }

    func publishStatus(isOnline: Bool) async throws(ChatError) {
        let status = try Self.encode(envelopes.status(isOnline: isOnline))
        try await publish(topic: topics.name(of: .status(configuration.userID)), status, .atLeastOnce, retain: true)
    }

    // MARK: Background work

    func startPumps() {
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

    func stopPumps() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        cancelPendingAnswers()
    }

    /// After a reconnect the broker may have published our will: say we are online again (same session, so our
    /// retained memberships count again) and heartbeat in every room at once, so members that dropped us (or saw
    /// our will) have us back within moments. Subscriptions are restored by the MQTT client.
    private func didReconnect() async {
        guard isConnected else { return }
        try? await publishStatus(isOnline: true)
        heartbeatSchedule?.reset()
        await sendDueHeartbeats(tick: 0)
    }
}
