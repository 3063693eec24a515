import Foundation
import MQTTClient
import MQTTCore

extension ChatClient {
    // MARK: Presence by heartbeat (see TOPICS.md): the tracker decides, this file does the I/O and keeps time.

    /// Applies `input` to the tracker at the current time and reports the changes.
    func applyPresence(_ input: PresenceInput, retained: Bool = false) {
        for change in tracker.apply(input, now: ContinuousClock.now, retained: retained) {
            emit(.presenceChanged(change))
        }
    }

    /// Records that this client itself is present in `room` (its own messages may not come back: No Local).
    func hearMyself(in room: RoomName, interval: Duration?) {
        applyPresence(
            .heard(room: room, user: configuration.userID, session: envelopes.session, profile: me.profile, interval: interval))
    }

    /// The interval to announce in `room` now; `nil` when heartbeats are off.
    func heartbeatInterval(in room: RoomName) -> Duration? {
        heartbeatSchedule?.interval(memberCount: tracker.members(of: room).count)
    }

    /// The JOIN announcement's extra MQTT 5 properties: "who is here?" answered on our presence reply topic.
    var whoIsHereResponseTopic: String? {
        usesMQTT5 && heartbeatSchedule != nil ? topics.name(of: .presenceReplies(configuration.userID)) : nil
    }

    /// Starts the heartbeat loop (one tick per base interval) and the loop that drops silent members.
    func startPresenceLoops() {
        if let base = configuration.heartbeatInterval {
            tasks.append(
                Task { [weak self] in
                    var tick = 0
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: base) } catch { return }
                        tick += 1
                        guard let self else { return }
                        await self.sendDueHeartbeats(tick: tick)
                    }
                })
        }
        // A quarter of the base interval (of 1 s at most): a member is dropped at most 25 % late, and a scan of the
        // tracker is cheap.
        let sweep = min(configuration.heartbeatInterval ?? .seconds(1), .seconds(1)) / 4
        tasks.append(
            Task { [weak self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: sweep) } catch { return }
                    guard let self else { return }
                    await self.expirePresence()
                }
            })
    }

    private func expirePresence() {
        for change in tracker.expire(now: ContinuousClock.now) { emit(.presenceChanged(change)) }
    }

    /// Sends the heartbeats due at `tick` (``HeartbeatSchedule``); with `tick` 0 after a reset, in every room.
    func sendDueHeartbeats(tick: Int) async {
        guard isConnected, var schedule = heartbeatSchedule else { return }
        var counts: [RoomName: Int] = [:]
        for room in joinedRooms { counts[room] = tracker.members(of: room).count }
        let due = schedule.roomsDue(tick: tick, memberCounts: counts)
        heartbeatSchedule = schedule
        for (room, interval) in due { await sendHeartbeat(in: room, interval: interval) }
    }

    /// Publishes one heartbeat in `room` (QoS 0, expiring once it is too old to matter), or to a newcomer's reply
    /// topic when answering its MQTT 5 "who is here?".
    func sendHeartbeat(in room: RoomName, interval: Duration, answering request: MQTTMessage? = nil) async {
        guard joinedRooms.contains(room) else { return }
        heartbeatSequence &+= 1
        guard let payload = try? Self.encode(envelopes.heartbeat(sequence: heartbeatSequence, interval: interval, in: room))
        else { return }
        hearMyself(in: room, interval: interval)
        // A heartbeat older than the timeout it resets is worthless: let the broker drop it.
        let timeout = interval * PresenceTracker.missedHeartbeatsAllowed
        let expiry = UInt32(clamping: max(1, timeout.components.seconds + 1))
        // QoS 0: a lost heartbeat is simply late; failures while offline are expected.
        if let request {
            try? await mqtt.respond(
                to: request, payload: payload, qos: .atMostOnce, properties: ChatWireProperties.envelope(expiry: expiry))
        } else {
            try? await publish(topic: topics.name(of: .roomMessages(room)), payload, .atMostOnce, expiry: expiry)
        }
    }

    /// Answers `newcomer`'s JOIN in `room`, which asks "who is here?".
    ///
    /// At MQTT 5, when the JOIN names the newcomer's own presence reply topic as its Response Topic, the heartbeat
    /// goes there at once: only the newcomer receives the answers. Otherwise (a 3.1.1 newcomer, or this client fell
    /// back to 3.1.1) it goes to the room after a random delay of up to half an interval, so a big room does not
    /// answer in one burst; one pending answer per room covers any number of JOINs.
    func answerWhoIsHere(in room: RoomName, newcomer: UserID, request: MQTTMessage) async {
        guard newcomer != configuration.userID, let interval = heartbeatInterval(in: room) else { return }
        if usesMQTT5, let responseTopic = request.properties.responseTopic,
            responseTopic == topics.name(of: .presenceReplies(newcomer))
        {
            await sendHeartbeat(in: room, interval: interval, answering: request)
            return
        }
        guard pendingAnswers[room] == nil else { return }
        let delay = interval / 2 * Double.random(in: 0..<1)
        pendingAnswers[room] = Task { [weak self] in
            do { try await Task.sleep(for: delay) } catch { return }
            await self?.sendDelayedAnswer(in: room)
        }
    }

    private func sendDelayedAnswer(in room: RoomName) async {
        pendingAnswers[room] = nil
        guard let interval = heartbeatInterval(in: room) else { return }
        await sendHeartbeat(in: room, interval: interval)
    }

    /// Cancels answers still waiting for their delay (on disconnect).
    func cancelPendingAnswers() {
        for task in pendingAnswers.values { task.cancel() }
        pendingAnswers.removeAll()
    }
}
