public import NIOCore

/// CONNECT: the first packet a client sends (MQTT 3.1.1 section 3.1).
public struct ConnectPacket: Sendable, Hashable {
    /// The protocol level and name the client announced.
    public var protocolVersion: MQTTProtocolVersion
    /// Clean Session (3.1.1) / Clean Start (5) flag.
    public var cleanSession: Bool
    /// Keep alive interval in seconds; 0 disables the keepalive mechanism.
    public var keepAliveSeconds: UInt16
    /// The client identifier; may be empty when `cleanSession` is true.
    public var clientIdentifier: String
    /// The will message, if the client registered one.
    public var will: Will?
    /// User name, if present.
    public var username: String?
    /// Password bytes, if present (binary data in MQTT).
    public var password: [UInt8]?
    /// MQTT 5 CONNECT properties; empty for 3.1.1.
    public var properties: MQTTProperties
    /// Whether the client is a bridge announcing itself with the protocol level's high bit (0x84 for 3.1.1, 0x85
    /// for 5; mosquitto's `try_private`). Such a client does not get its own messages back.
    public var isBridge = false

    /// Creates a CONNECT packet.
    public init(
        protocolVersion: MQTTProtocolVersion = .v3_1_1,
        cleanSession: Bool = true,
        keepAliveSeconds: UInt16 = 60,
        clientIdentifier: String,
        will: Will? = nil,
        username: String? = nil,
        password: [UInt8]? = nil,
        properties: MQTTProperties = .none
    ) {
        self.protocolVersion = protocolVersion
        self.cleanSession = cleanSession
        self.keepAliveSeconds = keepAliveSeconds
        self.clientIdentifier = clientIdentifier
        self.will = will
        self.username = username
        self.password = password
        self.properties = properties
    }

    /// The will message carried by CONNECT.
    public struct Will: Sendable, Hashable {
        /// Topic the will is published to; must be a valid topic name.
        public var topic: String
        /// Will payload.
        public var payload: ByteBuffer
        /// QoS the will is published with.
        public var qos: QoS
        /// Whether the will is published as a retained message.
        public var retain: Bool
        /// MQTT 5 will properties; empty for 3.1.1.
        public var properties: MQTTProperties

        /// Creates a will message.
        public init(topic: String, payload: ByteBuffer, qos: QoS = .atMostOnce, retain: Bool = false, properties: MQTTProperties = .none) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
            self.properties = properties
        }
    }
}
