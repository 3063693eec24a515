public import MQTTClient

/// Everything a ``ChatClient`` needs before it connects.
public struct ChatClientConfiguration: Sendable {
    /// The user's id; also its MQTT client id.
    public var userID: UserID
    /// How the user is shown to others.
    public var profile: UserProfile
    /// MQTT settings (broker address, keep-alive, TLS, reconnect policy, ...). The chat client overrides
    /// `clientID` with ``userID`` and `will` with the user's offline status.
    public var mqtt: MQTTClientConfiguration
    /// How often a heartbeat (QoS 0, never stored) is published in every joined room; `nil` sends none.
    public var heartbeatInterval: Duration?
    /// Where local history is stored.
    public var history: ChatHistoryLocation
    /// The topic layout.
    public var topics: ChatTopics
    /// How many recent message ids are remembered to drop redelivered copies.
    public var deduplicationCapacity: Int

    /// A configuration for `userID` on the broker at `host:port`, with history under `~/.mqttchat/<userID>.sqlite`.
    public init(userID: UserID, profile: UserProfile, host: String = "127.0.0.1", port: Int = 1883) {
        self.userID = userID
        self.profile = profile
        var mqtt = MQTTClientConfiguration(clientID: userID.rawValue, host: host, port: port)
        mqtt.keepAlive = .seconds(30)
        self.mqtt = mqtt
        heartbeatInterval = .seconds(10)
        history = .defaultFile(for: userID)
        topics = .standard
        deduplicationCapacity = 4096
    }
}
