import Foundation
import MQTTClient

extension ChatClient {
    // MARK: Room history for late joiners

    /// Asks a room history service (``RoomHistoryService``, MQTT 5 request/response on
    /// ``ChatTopics/historyRequests(of:)``) for the messages of `room` sent since the newest one in local history, and
    /// merges them into local history, deduplicated by message id. Returns the records that were new, oldest first.
    ///
    /// History stays on the clients: the service is an optional helper. ``join(_:)`` calls this in the background
    /// and ignores a missing service.
    /// - Throws: `.mqtt(.timeout)` when no service answered within `timeout`, `.mqtt(.mqtt5Required)` at 3.1.1,
    ///   `.notJoined` for a room that is not joined, `.history` when local history fails.
    public func fetchRoomHistory(_ room: RoomName, timeout: Duration) async throws(ChatError) -> [ChatMessageRecord] {
        guard joinedRooms.contains(room) else { throw .notJoined(room) }
        return try await fetchRoomHistory(room, since: try newestInHistory(room), timeout: timeout)
    }

    /// When the newest message of `room` in local history was sent, in milliseconds since 1970; 0 when there is none.
    func newestInHistory(_ room: RoomName) throws(ChatError) -> Int64 {
        let store = try historyStore()
        let newest: [ChatMessageRecord]
        do { newest = try store.history(room: room, limit: 1) } catch { throw .history(error) }
        return newest.last.map { Int64(($0.sentAt.timeIntervalSince1970 * 1000).rounded()) } ?? 0
    }

    /// Asks for the messages of `room` sent after `since` (ms) and merges them into local history.
    private func fetchRoomHistory(_ room: RoomName, since: Int64, timeout: Duration) async throws(ChatError)
        -> [ChatMessageRecord]
    {
        let store = try historyStore()
        let query = RoomHistoryQuery(sinceMs: since, limit: configuration.roomHistoryLimit)
        let response: MQTTMessage
        do {
            response = try await mqtt.request(
                topic: topics.historyRequests(of: room), payload: [], qos: .atLeastOnce, properties: query.properties,
                timeout: timeout)
        } catch {
            throw .mqtt(error)
        }
        var decoder = EnvelopeStreamDecoder()
        guard let envelopes = try? decoder.feed(response.payload) else { return [] }
        let roomTopic = topics.name(of: .roomMessages(room))
        var merged: [ChatMessageRecord] = []
        for envelope in envelopes {
            guard case .message(let record)? = try? interpreter.interpret(topic: roomTopic, envelope: envelope) else {
                continue
            }
            do {
                guard try store.store(record) else { continue }
                // Reported here, so a live copy arriving later is not reported again.
                _ = deduplicator.markSeen(record.id)
                merged.append(record)
            } catch {
                throw .history(error)
            }
        }
        return merged
    }

    /// Fetches `room`'s messages sent after `since` (ms; read before joining, so that messages arriving once joined,
    /// such as a greeting, do not hide the ones before them) in the background; reports them with
    /// ``ChatEvent/historyMerged(room:records:)`` and says nothing when no service answers.
    func startHistoryFetch(_ room: RoomName, since: Int64, timeout: Duration) {
        tasks.append(
            Task { [weak self] in
                guard let self, let records = try? await self.fetchRoomHistory(room, since: since, timeout: timeout),
                    !records.isEmpty
                else { return }
                await self.emit(.historyMerged(room: room, records: records))
            })
    }
}
