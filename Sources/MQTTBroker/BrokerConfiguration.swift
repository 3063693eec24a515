public import MQTTCore
public import NIOCore

/// Everything that tunes one broker instance. Every property has a default, so `BrokerConfiguration()` is a
/// working anonymous broker on 127.0.0.1:1883.
///
/// The names follow mosquitto's configuration keys where one exists (`max_inflight_messages`,
/// `max_queued_messages`, `max_packet_size`, `max_qos`, `retain_available`, `sys_interval`, `max_keepalive`,
/// `allow_anonymous`), so a config-file parser can map them one to one.
public struct BrokerConfiguration: Sendable {
    /// What a listener's clients speak on top of TCP (or TLS): mosquitto's `protocol` option.
    public enum ListenerProtocol: String, Sendable, Hashable {
        /// MQTT packets straight on the socket (`protocol mqtt`, the default).
        case mqtt
        /// MQTT packets in WebSocket binary frames after an HTTP/1.1 upgrade (`protocol websockets`), for browsers;
        /// see Sources/MQTTBroker/Transport/WebSocket/.
        case websockets
    }

    /// One TCP listener.
    public struct Listener: Sendable, Hashable {
        /// The address to bind; the broker is meant to listen on loopback unless told otherwise.
        public var host: String = "127.0.0.1"
        /// The TCP port; 0 binds an ephemeral port (read it back from ``MQTTBrokerServer/start()``).
        public var port: Int = 1883
        /// Serve TLS on this listener (Sources/MQTTBroker/TLS); `nil` is plain MQTT over TCP. On a
        /// ``ListenerProtocol/websockets`` listener it makes WebSockets over TLS (`wss://`).
        public var tls: BrokerTLSConfiguration?
        /// Plain MQTT or MQTT over WebSockets. A WebSocket listener is always served by SwiftNIO (never by the
        /// broker's own epoll loop), and its connections never park.
        public var transportProtocol: ListenerProtocol = .mqtt
        /// A directory whose files a ``ListenerProtocol/websockets`` listener serves to HTTP requests that are not a
        /// WebSocket upgrade (mosquitto's `http_dir`): GET and HEAD only, never outside the directory. `nil` answers
        /// such requests 404.
        public var httpDirectory: String?

        /// Creates a listener description.
        public init(
            host: String = "127.0.0.1", port: Int = 1883, tls: BrokerTLSConfiguration? = nil,
            transportProtocol: ListenerProtocol = .mqtt, httpDirectory: String? = nil
        ) {
            self.host = host
            self.port = port
            self.tls = tls
            self.transportProtocol = transportProtocol
            self.httpDirectory = httpDirectory
        }
    }

    /// The listeners to bind; each accepted connection shares the same broker state.
    public var listeners: [Listener] = [.init()]
    /// Whether clients that send no user name may connect. When false they get CONNACK 0x05 (not authorized).
    public var allowAnonymous: Bool = true
    /// Checks user name and password of clients that send one; `nil` accepts every user name.
    public var authenticator: (any MQTTBrokerAuthenticator)? = nil
    /// Outbound QoS 1/2 messages in flight per client (sent, not yet fully acknowledged); 0 means unlimited.
    public var maxInflightMessages: Int = 20
    /// QoS 1/2 messages queued per session behind the inflight window (or while offline); 0 means unlimited.
    /// Messages beyond the limit are dropped, counted and logged.
    public var maxQueuedMessages: Int = 1000
    // flow control and memory bounds (Session/PublisherBackpressure, Connection/PendingOutputGate).
    /// Bytes (topic + payload) of the messages queued per session; 0 means unlimited (mosquitto's
    /// `max_queued_bytes`). A message that would take the queue above it is dropped, counted and logged.
    public var maxQueuedBytes: Int = 0
    /// Bytes written to a connection and not yet taken by its socket above which the client counts as a slow
    /// consumer: QoS 0 messages for it are dropped (counted), QoS 1/2 messages wait in its session queue. 0 disables
    /// the bound. (mqttchat only.)
    public var maxPendingOutputBytes: Int = 1 << 20
    /// How long a connection's output may stay above ``maxPendingOutputBytes`` before it is closed (it is also
    /// closed at twice the bound); `nil` never closes for time. (mqttchat only.)
    public var slowConsumerTimeout: TimeAmount? = .seconds(30)
    /// Publisher back-pressure: how long an online session whose queue is above half its limits may go without
    /// acknowledging anything and still hold the publishers that fill it paused; `nil` disables back-pressure
    /// (full queues drop, as in mosquitto). (mqttchat only.)
    public var backpressureStallTimeout: TimeAmount? = .seconds(2)
    /// Largest remaining length (packet size without its 2 to 5 byte fixed header) a client may send; bigger
    /// packets close the connection as soon as their fixed header arrives.
    public var maxPacketSize: Int = MQTTPacketDecoder.protocolMaximumPacketSize
    /// Largest payload a PUBLISH or will may carry (mosquitto's `message_size_limit`); 0 means no limit. A larger
    /// PUBLISH is not routed, but its QoS flow completes (MQTT 5: PUBACK / PUBREC 0x95 Packet too large); a larger
    /// will refuses the CONNECT (MQTT 5: 0x95; 3.1.1: not authorised). The connection stays open.
    public var messageSizeLimit: Int = 0
    /// Highest QoS the broker grants; the granted QoS of a subscription is `min(requested, maxQoS)`.
    public var maxQoS: QoS = .exactlyOnce
    /// Whether retained messages are stored. When false, the retain flag of incoming PUBLISHes is ignored
    /// (the message is forwarded as a normal one and nothing is stored).
    public var retainAvailable: Bool = true
    /// Sockets that send no CONNECT within this time are closed.
    public var connectTimeout: TimeAmount = .seconds(10)
    /// How often `$SYS/broker/...` statistics are published; `nil` or zero disables `$SYS`.
    public var sysInterval: TimeAmount? = .seconds(10)
    /// The largest keepalive the broker lets clients use. An MQTT 5 client asking for more (or for none) is told
    /// this value in the CONNACK's Server Keep Alive and held to it, as mosquitto does; MQTT 3.1.1 has no way to
    /// tell a client, so a larger keepalive is accepted and honoured as sent (logged at notice level).
    public var maxKeepalive: UInt16 = 65535
    /// The most topic aliases an MQTT 5 client may set on its connection (`max_topic_alias`, mosquitto's default
    /// 10; 0 allows none). Sent as the CONNACK's Topic Alias Maximum.
    public var maxTopicAlias: UInt16 = 10
    /// How long an MQTT 3.1.1 persistent session outlives its client (`persistent_client_expiration`, in
    /// seconds); nil keeps it until the client cleans it, as mosquitto does by default. MQTT 5 sessions carry
    /// their own Session Expiry Interval.
    public var persistentClientExpiration: UInt32? = nil
    /// Whether a client may connect with an empty client identifier and be given one (`allow_zero_length_clientid`,
    /// true by default as in mosquitto); false refuses it with CONNACK 0x85 (3.1.1: 0x02).
    public var allowZeroLengthClientID: Bool = true
    /// The deepest topic filter a client may subscribe to, in levels; deeper filters get SUBACK 0x80.
    /// MQTT sets no limit, but every match walks the subscription trie level by level, so an unbounded depth
    /// would let one client make every publish (and its own disconnect) arbitrarily expensive.
    public var maxTopicLevels: Int = 128
    /// Whether QoS 0 messages are queued for offline persistent sessions (mosquitto's `queue_qos0_messages`).
    public var queueQoS0Messages: Bool = false
    // access control and connection limit (Sources/MQTTBroker/Auth).
    /// Who may publish, subscribe to and receive which topics (`acl_file`); `nil` allows everything.
    public var accessControl: AccessControlList? = nil
    /// Most sockets open at once across all listeners (`max_connections`); 0 or less means unlimited. Sockets
    /// beyond it are closed when accepted.
    public var maxConnections: Int = 0
    /// How many event loops serve client sockets (reads, writes and system calls); accepted connections are spread
    /// over them. 1 keeps every socket on the broker core's loop. When the server's event loop group has exactly
    /// this many loops its loops are used, otherwise the broker runs a group of this size itself. The broker's
    /// state and routing stay on one loop, so every extra socket loop costs a hand-off per read batch: one loop, the
    /// default, is the fastest choice on small and large machines alike (docs/benchmarks.md). Values below 1 count
    /// as 1. `threads auto` in the config file asks for one loop per core the process may run on
    /// (``AvailableCores``).
    public var eventLoopCount: Int = 1
    /// What serves plain-TCP sockets on the broker core's loop (`socket_engine`). See ``SocketEngine``.
    public var socketEngine: SocketEngine = .automatic
    /// On the broker's own epoll loop (``SocketEngine/automatic`` with one loop), how long a wait for events polls
    /// before it sleeps, while the loop is busy: its work took at least half of the last millisecond and its last
    /// wait ended within this time (`poll_before_sleep_us`). Under load the loop then seldom sleeps, and neither it
    /// nor the clients writing to it pay for its wake-ups; an idle or lightly loaded loop sleeps at once. Zero never
    /// polls. SwiftNIO's loops never poll.
    public var pollBeforeSleep: TimeAmount = .microseconds(20)
    /// Durable persistence of retained messages and persistent sessions (`persistence true`); nil = off,
    /// as in mosquitto: then everything is kept in memory only and lost when the broker stops.
    public var persistence: PersistenceConfiguration? = nil
    /// MQTT bridges to remote brokers (`connection` blocks, docs/bridges.md); none by default.
    public var bridges: [BridgeConfiguration] = []
    /// A plain-TCP connection that has neither received nor sent a byte for this long, with nothing in flight,
    /// gives up its SwiftNIO channel and waits on a socket watcher of the broker's own until the client sends
    /// something or a message is written to it (`park_idle_connections_after_ms`). An idle connection then costs
    /// less than half the memory, for a small delay on the first packet after a park and some broker CPU per park
    /// and return. TLS connections never park. `nil` (0 in the config file) keeps every
    /// connection on its channel, and lets NIO accept the sockets.
    public var parkIdleConnectionsAfter: TimeAmount? = .milliseconds(500)
    /// An HTTP listener serving the broker's Prometheus metrics at `GET /metrics` (`metrics_listener ADDRESS:PORT`;
    /// Sources/MQTTBroker/Metrics); nil, the default, serves none. (mqttchat only.)
    public var metricsListener: MetricsListener? = nil

    /// Creates the default configuration.
    public init() {}
}

/// Decides whether a client that sent a user name may connect.
///
/// Called on the broker's event loop for every CONNECT that carries a user name: keep it fast and non-blocking.
public protocol MQTTBrokerAuthenticator: Sendable {
    /// Returns whether `username`/`password` may connect as `clientIdentifier`.
    func authenticate(username: String, password: [UInt8]?, clientIdentifier: String) -> Bool
}
