public import MQTTClient

/// A request to a room history service: "the last `limit` messages sent at or after `sinceMs`". It travels as
/// MQTT 5 user properties of the request (the payload is empty); the response is the matching envelopes,
/// varint-length-prefixed, oldest first.
public struct RoomHistoryQuery: Sendable, Hashable {
    /// User property: the earliest `sent_at_ms` wanted (decimal milliseconds since 1970).
    public static let sinceProperty = "since-ms"
    /// User property: the most messages wanted (decimal).
    public static let limitProperty = "limit"
    /// User property of a response: how many envelopes it holds.
    public static let countProperty = "count"

    /// The earliest send time wanted, in milliseconds since 1970 (0: everything kept).
    public var sinceMs: Int64
    /// The most messages wanted (the newest ones win).
    public var limit: Int

    /// Creates a query.
    public init(sinceMs: Int64, limit: Int) {
        self.sinceMs = sinceMs
        self.limit = limit
    }

    /// Reads a query from a request's user properties; missing or malformed values mean "everything".
    public init(properties: MQTTPublishProperties, defaultLimit: Int) {
        var since: Int64 = 0
        var limit = defaultLimit
        for property in properties.userProperties {
            switch property.name {
            case Self.sinceProperty: since = Int64(property.value).map { max(0, $0) } ?? 0
            case Self.limitProperty: limit = Int(property.value).map { min(max(0, $0), defaultLimit) } ?? defaultLimit
            default: continue
            }
        }
        self.init(sinceMs: since, limit: limit)
    }

    /// The request's properties.
    public var properties: MQTTPublishProperties {
        MQTTPublishProperties(userProperties: [
            MQTTUserProperty(ChatWireProperties.schemaVersionProperty, ChatWireProperties.schemaVersion),
            MQTTUserProperty(Self.sinceProperty, String(sinceMs)),
            MQTTUserProperty(Self.limitProperty, String(limit)),
        ])
    }
}
