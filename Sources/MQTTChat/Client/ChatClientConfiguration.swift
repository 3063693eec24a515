public import MQTTClient

/// Everything a ``ChatClient`` needs before it connects.
public struct ChatClientConfiguration: Sendable {
    /// One week, in seconds: the default inbox session expiry and direct message retention.
    public static let oneWeek: UInt32 = 7 * 24 * 60 * 60

    /// The user's id; also its MQTT client id.
    public var userID: UserID
    /// How the user is shown to others.
    public var profile: UserProfile
    /// MQTT settings (broker address, keep-alive, TLS, reconnect policy, ...). The chat client overrides
    /// `clientID` with ``userID``, `will` with the user's offline status and `inboxTopic` with the user's inbox.
    /// `protocolVersion` defaults to MQTT 5: the client falls back to 3.1.1 (once, and remembers it) when the broker
    /// refuses MQTT 5 in its CONNACK. At MQTT 5 `cleanSession` and `sessionExpiryInterval` are replaced by
    /// ``inboxSessionExpiry``.
    public var mqtt: MQTTClientConfiguration
    /// The base interval of presence heartbeats (QoS 0, never stored) in every joined room; rooms of more than
    /// 10 members use a multiple of it (``HeartbeatSchedule``). Members are dropped after 3 intervals without a
    /// heartbeat, so the default 3 s drops a silent member after about 10 s (the design notes' timeout).
    /// `nil` sends none, answers no "who is here?" and times nobody out by default: presence then rests on the
    /// retained cache and wills alone, which a clustered broker does not share between nodes.
    public var heartbeatInterval: Duration?
    /// Where local history is stored.
    public var history: ChatHistoryLocation
    /// The topic layout.
    public var topics: ChatTopics
    /// How many recent message ids are remembered to drop redelivered copies.
    public var deduplicationCapacity: Int
    /// MQTT 5 Message Expiry Interval, in seconds, of the messages that are worse late than never: heartbeats and
    /// the join/leave announcements in a room. The broker drops them when it could not deliver them in time (for
    /// example to a session that was offline). Default 30 s.
    public var ephemeralMessageExpiry: UInt32
    /// MQTT 5 Message Expiry Interval, in seconds, of direct messages: how long one waits in the session of a
    /// recipient who is offline. Default 7 days.
    public var directMessageRetention: UInt32
    /// MQTT 5 Session Expiry Interval, in seconds, of this user's session (its inbox): while it lasts the broker keeps
    /// the inbox subscription of a disconnected user and queues its direct messages. Default 7 days; `nil` uses a
    /// clean session that ends with the connection (as at MQTT 3.1.1).
    public var inboxSessionExpiry: UInt32?
    /// How long ``ChatClient/join(_:)`` waits in the background for a room history service to answer "messages since
    /// the newest I have" (MQTT 5 request/response); `nil` never asks. Default 2 s. Without a service nothing
    /// happens: no error, no event.
    public var roomHistoryTimeout: Duration?
    /// The most messages asked of a room history service per join.
    public var roomHistoryLimit: Int

    /// A configuration for `userID` on the broker at `host:port`, with history under `~/.mqttchat/<userID>.sqlite`.
    public init(userID: UserID, profile: UserProfile, host: String = "127.0.0.1", port: Int = 1883) {
        self.userID = userID
        self.profile = profile
        var mqtt = MQTTClientConfiguration(clientID: userID.rawValue, host: host, port: port)
        mqtt.keepAlive = .seconds(30)
        mqtt.protocolVersion = .v5
        self.mqtt = mqtt
        heartbeatInterval = .seconds(3)
        history = .defaultFile(for: userID)
        topics = .standard
        deduplicationCapacity = 4096
        ephemeralMessageExpiry = 30
        directMessageRetention = Self.oneWeek
        inboxSessionExpiry = Self.oneWeek
        roomHistoryTimeout = .seconds(2)
        roomHistoryLimit = 100
    }
}
