import MQTTChat
import MQTTClient
import Testing

@Suite("Room history queries")
struct RoomHistoryQueryTests {
    @Test("a query travels as user properties and reads back the same")
    func roundTrip() {
        let query = RoomHistoryQuery(sinceMs: 1_700_000_000_123, limit: 25)
        #expect(RoomHistoryQuery(properties: query.properties, defaultLimit: 100) == query)
        #expect(query.properties.userProperties.contains(MQTTUserProperty("since-ms", "1700000000123")))
    }

    @Test("missing or malformed values mean everything the service keeps; the limit never exceeds it")
    func malformed() {
        let garbage = MQTTPublishProperties(userProperties: [
            MQTTUserProperty("since-ms", "yesterday"), MQTTUserProperty("limit", "many"),
        ])
        #expect(RoomHistoryQuery(properties: garbage, defaultLimit: 50) == RoomHistoryQuery(sinceMs: 0, limit: 50))
        #expect(RoomHistoryQuery(properties: MQTTPublishProperties(), defaultLimit: 50) == RoomHistoryQuery(sinceMs: 0, limit: 50))
        let greedy = MQTTPublishProperties(userProperties: [MQTTUserProperty("limit", "1000000")])
        #expect(RoomHistoryQuery(properties: greedy, defaultLimit: 50).limit == 50)
    }

    @Test("the room history request topic is not a chat topic")
    func requestTopic() throws {
        let topics = ChatTopics.standard
        let topic = topics.historyRequests(of: try RoomName("lobby"))
        #expect(topic == "mqttchat/rooms/lobby/history")
        #expect(topics.parse(topic) == nil)
    }
}
