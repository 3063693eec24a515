public import MQTTCore

/// Everything one load generator run needs. Build it, call ``validated()``, hand it to ``LoadGenerator/run(_:progress:)``.
public struct LoadGenConfig: Sendable, Hashable {
    /// How inbound bytes are parsed.
    public enum DecodePath: String, Sendable, Hashable, Codable {
        /// Scan fixed headers and read PUBLISH / acknowledgement fields in place (no allocation per message);
        /// other packets go through ``MQTTPacketDecoder``.
        case scan
        /// Decode every packet with ``MQTTPacketDecoder`` (allocates the topic string of each PUBLISH).
        case full
    }

    /// How the publishers of a fixed-rate run share the rate.
    public enum Pacing: String, Sendable, Hashable, Codable, CaseIterable {
        /// Each publisher sends at `rate / publishers`, offset from the others so that together they make one
        /// evenly spaced stream at `rate`: latency at the rate, without queueing behind other messages.
        case interleaved
        /// Every publisher's message is due at the same instants: a burst of `publishers` messages every
        /// `publishers / rate` seconds. Latency then includes the queueing behind the rest of the burst (as when a
        /// whole chat room answers at once).
        case aligned
    }

    /// What the generator's connections speak to the broker.
    public enum Transport: String, Sendable, Hashable, Codable, CaseIterable {
        /// MQTT packets straight on TCP.
        case tcp
        /// MQTT packets in WebSocket binary frames after an HTTP/1.1 upgrade to ``LoadGenConfig/webSocketPath``
        /// (subprotocol `mqtt`), as browsers connect.
        case ws
    }

    /// Broker host (an address or a name).
    public var host: String = "127.0.0.1"
    /// Broker TCP port.
    public var port: Int = 1883
    /// Plain MQTT over TCP or MQTT over WebSockets.
    public var transport: Transport = .tcp
    /// With ``Transport/ws``: the path of the upgrade request (`mosquitto` and mqttchat accept any, ejabberd's
    /// `mod_mqtt` handler is mounted at one).
    public var webSocketPath: String = "/mqtt"
    /// User name sent in every CONNECT (nil: none). Brokers with anonymous login may still want one (ejabberd's
    /// `login_anon` needs a non-empty user name and password).
    public var username: String?
    /// Password sent in every CONNECT with ``username`` (nil: none).
    public var password: String?
    /// Traffic shape.
    public var scenario: LoadScenario = .fanout
    /// QoS of every PUBLISH and every subscription.
    public var qos: QoS = .atMostOnce
    /// Number of publishing connections.
    public var publishers: Int = 1
    /// Number of subscribing connections.
    public var subscribers: Int = 10
    /// Messages each publisher sends (ignored when ``duration`` is set).
    public var messagesPerPublisher: Int = 10_000
    /// Publish for this many seconds instead of a fixed count; in idle mode, how long to hold the connections.
    public var duration: Double?
    /// Payload size in bytes; at least ``PayloadStamp/byteCount``.
    public var payloadSize: Int = PayloadStamp.byteCount
    /// Fixed-rate mode: total messages per second over all publishers (paced sending, latency is reported).
    public var rate: Double?
    /// Fixed-rate mode: whether the publishers' messages interleave evenly or leave in bursts.
    public var pacing: Pacing = .interleaved
    /// Unacknowledged QoS 1/2 messages each publisher may have outstanding. Keep it at or below the broker's
    /// inflight limit: mosquitto 2.0 acknowledges but silently drops incoming QoS 2 messages beyond
    /// `max_inflight_messages` (default 20) from MQTT 3.1.1 clients.
    public var inflight: Int = 20
    /// Idle mode: number of connections to open.
    public var connections: Int = 100
    /// Idle mode: connections being opened at the same time.
    public var connectConcurrency: Int = 64
    /// Broker process to observe: idle mode reads its VmRSS before and after; publish/subscribe runs read its CPU
    /// time and system calls around publishing and draining (``LoadGenResult/brokerUsage``).
    public var brokerPID: Int32?
    /// Keepalive announced in CONNECT; the generator sends PINGREQ every half interval.
    public var keepAliveSeconds: UInt16 = 60
    /// Longest time to connect and subscribe everything.
    public var connectTimeout: Double = 10
    /// Longest publishing phase (after it publishers stop; unacknowledged messages are reported).
    public var publishTimeout: Double = 60
    /// After the publishers finish, how long to wait for missing messages before reporting them lost.
    public var drainTimeout: Double = 3
    /// Event loop threads of the generator.
    public var threads: Int = 1
    /// How inbound packets are parsed.
    public var decodePath: DecodePath = .scan
    /// Prefix of every topic; a random run id is appended so concurrent runs never see each other's messages.
    public var topicPrefix: String = "bench"
    /// The MQTT protocol level every connection speaks: ``MQTTProtocolVersion/v3_1_1`` (the default) or
    /// ``MQTTProtocolVersion/v5`` (CONNECT at level 5, SUBSCRIBE and PUBLISH with their property blocks,
    /// acknowledgements in the 4-byte form MQTT 5 allows for success).
    public var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// MQTT 5 only: each publisher sends its first PUBLISH with the topic and Topic Alias 1, and every later one with
    /// an empty topic and alias 1 (MQTT 5.0 3.3.2.3.4), so the wire cost of a topic name is paid once per connection.
    /// The broker's CONNACK must grant a Topic Alias Maximum of at least 1, or the run fails with
    /// ``LoadGenError/topicAliasesUnavailable(maximum:)``.
    public var topicAlias: Bool = false

    /// Creates a configuration with the scenario's default publisher and subscriber counts.
    public init(scenario: LoadScenario = .fanout, qos: QoS = .atMostOnce) {
        self.scenario = scenario
        self.qos = qos
        (publishers, subscribers) = scenario.defaultCounts
    }

    /// Whether latencies are recorded (fixed-rate mode).
    public var recordsLatency: Bool { rate != nil }

    /// The configuration with payload size clamped to the stamp, or a typed error if it cannot run.
    public func validated() throws(LoadGenError) -> LoadGenConfig {
        var config = self
        config.payloadSize = max(payloadSize, PayloadStamp.byteCount)
        guard (1...65_535).contains(port) else { throw .invalidConfiguration("port \(port) is out of range") }
        guard webSocketPath.hasPrefix("/"), !webSocketPath.contains(where: \.isWhitespace) else {
            throw .invalidConfiguration("the WebSocket path must start with / and contain no white space")
        }
        if password != nil, username == nil { throw .invalidConfiguration("a password needs a user name") }
        guard protocolVersion == .v3_1_1 || protocolVersion == .v5 else {
            throw .invalidConfiguration("the protocol version must be 3.1.1 or 5")
        }
        if topicAlias, protocolVersion != .v5 { throw .invalidConfiguration("topic aliases need MQTT 5") }
        guard threads >= 1 else { throw .invalidConfiguration("at least one thread is needed") }
        guard connectTimeout > 0, publishTimeout > 0, drainTimeout >= 0 else {
            throw .invalidConfiguration("timeouts must be positive")
        }
        if let duration, !(duration >= 0) { throw .invalidConfiguration("duration must be >= 0") }
        if scenario == .idle {
            guard connections >= 1 else { throw .invalidConfiguration("idle mode needs at least one connection") }
            guard connectConcurrency >= 1 else { throw .invalidConfiguration("connect concurrency must be >= 1") }
            return config
        }
        guard publishers >= 1, subscribers >= 1 else {
            throw .invalidConfiguration("\(scenario.rawValue) needs at least one publisher and one subscriber")
        }
        if scenario == .pairs, publishers != subscribers {
            throw .invalidConfiguration("pairs needs as many subscribers as publishers")
        }
        guard duration != nil || messagesPerPublisher >= 1 else {
            throw .invalidConfiguration("messages per publisher must be >= 1")
        }
        guard messagesPerPublisher < Int(UInt32.max) else { throw .invalidConfiguration("too many messages") }
        if let rate, !(rate > 0) { throw .invalidConfiguration("rate must be > 0") }
        guard (1...60_000).contains(inflight) else { throw .invalidConfiguration("inflight must be 1...60000") }
        guard payloadSize <= 16 * 1024 * 1024 else { throw .invalidConfiguration("payload size over 16 MiB") }
        return config
    }
}

extension LoadGenConfig {
    /// The user name and password of every CONNECT.
    var login: WirePackets.Login { WirePackets.Login(username: username, password: password) }

    /// How long after the common start publisher `index`'s first message is due: `index / rate` seconds when
    /// interleaved (so consecutive messages of the whole run are `1 / rate` apart), 0 when aligned or not paced.
    func phaseNanos(ofPublisher index: Int) -> UInt64 {
        guard let rate, pacing == .interleaved else { return 0 }
        return UInt64((Double(index) * 1e9 / rate).rounded())
    }
}
