public import MQTTCore

/// One `connection` block of the configuration: an MQTT bridge from this broker to a remote broker, with
/// mosquitto's keys and meanings (see docs/bridges.md).
public struct BridgeConfiguration: Sendable, Equatable {
    /// A remote broker's address (`address HOST[:PORT]`).
    public struct Address: Sendable, Equatable {
        /// Host name or IP address.
        public var host: String
        /// TCP port (1883 by default, as in mosquitto).
        public var port: Int

        /// Creates an address.
        public init(host: String, port: Int = 1883) {
            self.host = host
            self.port = port
        }
    }

    /// How long to wait before reconnecting (`restart_timeout`).
    public enum RestartTimeout: Sendable, Equatable {
        /// `restart_timeout SECONDS`: always the same delay.
        case constant(seconds: Int)
        /// `restart_timeout BASE CAP`: mosquitto's "decorrelated jitter", each delay drawn between `base` and
        /// three times the previous one, at most `cap`.
        case backoff(base: Int, cap: Int)
        /// Our default, the client's reconnect policy: doubling from `initial` to `maximum` seconds, ±20 % jitter.
        case doubling(initial: Int, maximum: Int)
    }

    /// TLS towards the remote broker (`bridge_cafile`, `bridge_certfile`, `bridge_keyfile`, `bridge_insecure`).
    public struct TLS: Sendable, Equatable {
        /// The CA certificates the remote's certificate must chain to.
        public var caFile: String
        /// A client certificate to present, with its key.
        public var certificateFile: String?
        /// The key of ``certificateFile``.
        public var keyFile: String?
        /// Skips the host name check (the chain is still verified), as mosquitto's `bridge_insecure`.
        public var insecure: Bool

        /// Creates TLS settings.
        public init(caFile: String, certificateFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }

    /// The connection's name (`connection NAME`).
    public var name: String
    /// Remote addresses, tried in turn on each reconnect (`address`, `addresses`).
    public var addresses: [Address] = []
    /// What is forwarded, in which direction (`topic`).
    public var topics: [BridgeTopic] = []
    /// The client identifier on the remote broker; mosquitto's default is `HOSTNAME.NAME`.
    public var remoteClientID: String?
    /// User name and password on the remote broker.
    public var remoteUsername: String?
    /// Password on the remote broker.
    public var remotePassword: String?
    /// The client identifier of the bridge's session on this broker; `local.` + the remote client id by default.
    public var localClientID: String?
    /// The user name whose ACL rules apply to the bridge's local side (it is not authenticated, as in mosquitto).
    public var localUsername: String?
    /// `cleansession`: whether the remote session starts clean at every connection (mosquitto's default: false).
    public var cleanSession = false
    /// `bridge_protocol_version`: MQTT 3.1.1 (default) or 5.
    public var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// `try_private`: announce a bridge (protocol level | 0x80) so the remote does not echo our messages back.
    public var tryPrivate = true
    /// `notifications`: publish the connection state (1/0, retained) locally.
    public var notifications = true
    /// `notifications_local_only`: publish the state on this broker only; otherwise also on the remote (a retained
    /// "1" after connecting, and a will of "0"), as mosquitto does.
    public var notificationsLocalOnly = false
    /// `notification_topic`; `$SYS/broker/connection/REMOTE_CLIENTID/state` by default, as in mosquitto.
    public var notificationTopic: String?
    /// `restart_timeout`; our default is the client's reconnect policy, 1 s doubling to 64 s with jitter.
    public var restartTimeout: RestartTimeout = .doubling(initial: 1, maximum: 64)
    /// `keepalive_interval` in seconds (mosquitto's default 60).
    public var keepaliveSeconds: UInt16 = 60
    /// TLS towards the remote; nil for plain TCP.
    public var tls: TLS?

    /// Creates a bridge named `name` with mosquitto's defaults.
    public init(name: String) {
        self.name = name
    }

    /// The client identifier used on the remote broker.
    public func resolvedRemoteClientID(hostName: String) -> String {
        remoteClientID ?? "\(hostName).\(name)"
    }

    /// The client identifier of the bridge's persistent session on this broker.
    public func resolvedLocalClientID(hostName: String) -> String {
        localClientID ?? "local.\(resolvedRemoteClientID(hostName: hostName))"
    }

    /// The topic the connection state is published on.
    public func resolvedNotificationTopic(hostName: String) -> String {
        notificationTopic ?? "$SYS/broker/connection/\(resolvedRemoteClientID(hostName: hostName))/state"
    }
}

/// One `topic PATTERN [out|in|both] [QOS] [LOCAL_PREFIX] [REMOTE_PREFIX]` line, with mosquitto's remapping: the
/// local side of a message is `LOCAL_PREFIX + PATTERN`, the remote side `REMOTE_PREFIX + PATTERN`; a message
/// crossing the bridge loses one prefix and gains the other. An empty pattern (`""`) makes the prefixes whole
/// topic names.
public struct BridgeTopic: Sendable, Equatable {
    /// Which way messages cross.
    public enum Direction: String, Sendable, Equatable {
        /// Local messages are published on the remote.
        case out
        /// Remote messages are published locally.
        case `in`
        /// Both.
        case both
    }

    /// The pattern (a topic filter, possibly empty).
    public var pattern: String
    /// Direction; `out` by default.
    public var direction: Direction
    /// The QoS of the subscriptions on each side (0 by default): messages cross at min(their QoS, this).
    public var qos: QoS
    /// Prefix of the local topic ("" for none).
    public var localPrefix: String
    /// Prefix of the remote topic ("" for none).
    public var remotePrefix: String

    /// Creates a topic line.
    public init(
        pattern: String, direction: Direction = .out, qos: QoS = .atMostOnce, localPrefix: String = "",
        remotePrefix: String = ""
    ) {
        self.pattern = pattern
        self.direction = direction
        self.qos = qos
        self.localPrefix = localPrefix
        self.remotePrefix = remotePrefix
    }

    /// The filter subscribed to on this broker (for `out` and `both`).
    public var localFilter: String { localPrefix + pattern }
    /// The filter subscribed to on the remote broker (for `in` and `both`).
    public var remoteFilter: String { remotePrefix + pattern }

    /// Whether local messages cross to the remote.
    public var isOutbound: Bool { direction != .in }
    /// Whether remote messages cross to this broker.
    public var isInbound: Bool { direction != .out }

    /// The remote topic of local `topic` if it matches this line's local filter, else nil.
    public func remoteTopic(forLocal topic: String) -> String? {
        Self.remap(topic, filter: localFilter, from: localPrefix, to: remotePrefix)
    }

    /// The local topic of remote `topic` if it matches this line's remote filter, else nil.
    public func localTopic(forRemote topic: String) -> String? {
        Self.remap(topic, filter: remoteFilter, from: remotePrefix, to: localPrefix)
    }

    private static func remap(_ topic: String, filter: String, from oldPrefix: String, to newPrefix: String) -> String? {
        guard TopicMatcher.matches(topic: topic, filter: filter), topic.hasPrefix(oldPrefix) else { return nil }
        return newPrefix + topic.dropFirst(oldPrefix.count)
    }
}

/// MQTT topic filter matching for the bridge's remapping (MQTT 3.1.1 section 4.7); `$` topics match only filters
/// that name their first level.
enum TopicMatcher {
    static func matches(topic: String, filter: String) -> Bool {
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        let filterLevels = filter.split(separator: "/", omittingEmptySubsequences: false)
        if topic.hasPrefix("$"), let first = filterLevels.first, first == "#" || first == "+" { return false }
        var index = 0
        for level in filterLevels {
            if level == "#" { return true }
            guard index < topicLevels.count else { return false }
            if level != "+" && level != topicLevels[index] { return false }
            index += 1
        }
        return index == topicLevels.count
    }
}
