public import MQTTCore

/// Everything an ``MQTTClient`` needs to know before it connects.
public struct MQTTClientConfiguration: Sendable {
    /// Host name or IP address of the broker.
    public var host: String = "127.0.0.1"
    /// TCP port of the broker (1883 plain, usually 8883 with TLS).
    public var port: Int = 1883
    /// The client identifier sent in CONNECT. Must not be empty at MQTT 3.1/3.1.1; at MQTT 5 an empty one (with
    /// `cleanSession`) asks the broker to assign one (``MQTTConnAckInfo/assignedClientIdentifier``).
    public var clientID: String
    /// Keep-alive interval announced in CONNECT; the client pings when idle this long.
    public var keepAlive: Duration = .seconds(60)
    /// Whether the broker should discard any previous session for this client identifier (MQTT 5: Clean Start).
    public var cleanSession: Bool = true
    /// User name for broker authentication, if any.
    public var username: String?
    /// Password for broker authentication, if any (ignored without a user name).
    public var password: String?
    /// The last-will message the broker publishes when this client vanishes without DISCONNECT.
    public var will: MQTTWill?
    /// TLS settings; `nil` connects over plain TCP.
    public var tls: MQTTTLSConfiguration?
    /// The MQTT protocol revision to speak.
    public var protocolVersion: MQTTClientProtocolVersion = .v3_1_1
    /// How many QoS 1/2 messages may be unacknowledged on the wire at once.
    public var maxInflightMessages: Int = 20
    /// MQTT 5 Receive Maximum, sent in CONNECT: how many QoS 1/2 messages the broker may have unacknowledged toward
    /// this client at once (1...65535). The default is the protocol's own; libmosquitto's default of 20 made it close
    /// the connection with a protocol error when a mosquitto 2.0.11 broker sent a burst of QoS 2 messages.
    public var receiveMaximum: UInt16 = 65535
    /// How many QoS 1/2 publishes are accepted while disconnected; beyond that `publish` throws
    /// ``MQTTClientError/offlineQueueFull``.
    public var offlineQueueLimit: Int = 1000
    /// How many QoS 0 messages may wait in the send queue, accepted by `publish` but not yet written to the socket;
    /// a QoS 0 publish beyond that waits until one is written.
    public var qos0QueueLimit: Int = 1000
    /// Whether to disable Nagle's algorithm (`TCP_NODELAY`): lower latency for small packets, possibly more of them.
    public var tcpNoDelay: Bool = false
    /// What to do after an established connection is lost.
    public var reconnect: ReconnectPolicy = .exponential()
    /// MQTT 5 Session Expiry Interval in seconds, sent in CONNECT: how long the broker keeps the session after the
    /// connection closes (`nil` sends none, which means 0: the session ends with the connection; `UInt32.max`
    /// never expires). Combine with `cleanSession = false` to resume it.
    public var sessionExpiryInterval: UInt32?
    /// MQTT 5 request/response: how many ``MQTTClient/request(topic:payload:qos:properties:timeout:)`` calls may
    /// wait for their responses at once; one more throws ``MQTTClientError/tooManyOutstandingRequests(limit:)``.
    public var maxOutstandingRequests: Int = 64
    /// The client's inbox topic; responses to its requests arrive under `<inbox>/reply`. `nil` uses the chat
    /// layer's naming, `mqttchat/users/<clientID>/inbox` (with the broker-assigned identifier if `clientID` is
    /// empty).
    public var inboxTopic: String?

    /// Creates a configuration with defaults for everything but the client identifier and the broker address.
    public init(clientID: String, host: String = "127.0.0.1", port: Int = 1883) {
        self.clientID = clientID
        self.host = host
        self.port = port
    }
}

/// A last-will message, published by the broker if the client disappears without a clean DISCONNECT.
public struct MQTTWill: Sendable, Hashable {
    /// Topic the will is published to.
    public var topic: String
    /// Payload of the will message.
    public var payload: [UInt8]
    /// Quality of service of the will message.
    public var qos: QoS
    /// Whether the broker retains the will message.
    public var retain: Bool
    /// MQTT 5 properties of the will message (at 3.1.1 a non-empty value is refused).
    public var properties: MQTTPublishProperties
    /// MQTT 5 Will Delay Interval in seconds: the broker waits this long (or until the session ends) before
    /// publishing the will, so a quick reconnect suppresses it.
    public var delayInterval: UInt32?

    /// Creates a will message.
    public init(
        topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false,
        properties: MQTTPublishProperties = MQTTPublishProperties(), delayInterval: UInt32? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
        self.delayInterval = delayInterval
    }
}

/// TLS settings for the connection to the broker.
public struct MQTTTLSConfiguration: Sendable, Hashable {
    /// PEM file with the certificate authorities trusted to sign the broker certificate.
    public var caFile: String?
    /// Directory of PEM certificate authorities (hashed names, see `openssl rehash`).
    public var caPath: String?
    /// PEM client certificate for mutual TLS, if any.
    public var certFile: String?
    /// PEM private key matching `certFile`.
    public var keyFile: String?
    /// Whether the broker certificate's name must match `host`; turning this off is insecure.
    public var verifyHostname: Bool = true
    /// The TLS protocol version to use, for example `"tlsv1.2"` or `"tlsv1.3"`; `nil` lets libmosquitto choose.
    public var tlsVersion: String?

    /// Creates TLS settings; at least one of `caFile` or `caPath` is required.
    public init(
        caFile: String? = nil, caPath: String? = nil, certFile: String? = nil, keyFile: String? = nil,
        verifyHostname: Bool = true, tlsVersion: String? = nil
    ) {
        self.caFile = caFile
        self.caPath = caPath
        self.certFile = certFile
        self.keyFile = keyFile
        self.verifyHostname = verifyHostname
        self.tlsVersion = tlsVersion
    }
}

/// MQTT protocol revisions the client can speak (through libmosquitto).
public enum MQTTClientProtocolVersion: Sendable, Hashable {
    /// MQTT 3.1 ("MQIsdp", level 3).
    case v3_1
    /// MQTT 3.1.1 (level 4).
    case v3_1_1
    /// MQTT 5.0 (level 5): adds properties, subscription options, reason codes, session expiry and
    /// request/response.
    case v5
}

/// How the client reconnects after an established connection is lost.
public enum ReconnectPolicy: Sendable, Hashable {
    /// Never reconnect automatically; the state stays `.disconnected` until `connect()` is called again.
    case disabled
    /// Wait `initial`, then multiply by `factor` after every failed attempt, never beyond `maximum`.
    /// With `jitter`, each delay is scattered by up to ±20 % so that many clients do not reconnect in lockstep.
    /// The delay resets to `initial` after a successful connection.
    case exponential(
        initial: Duration = .seconds(1), factor: Int = 2, maximum: Duration = .seconds(64), jitter: Bool = true)
}
