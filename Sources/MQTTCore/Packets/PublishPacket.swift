public import NIOCore

/// PUBLISH: an application message in either direction (MQTT 3.1.1 section 3.3).
public struct PublishPacket: Sendable, Hashable {
    /// The topic name; never contains wildcards.
    public var topic: String
    /// The application payload.
    public var payload: ByteBuffer
    /// Delivery QoS of this copy.
    public var qos: QoS
    /// RETAIN flag.
    public var retain: Bool
    /// DUP flag: this is a re-delivery of an earlier attempt (QoS > 0 only).
    public var dup: Bool
    /// Packet identifier; non-nil exactly when `qos` is above 0.
    public var packetID: UInt16?
    /// MQTT 5 PUBLISH properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates a PUBLISH packet.
    public init(
        topic: String,
        payload: ByteBuffer,
        qos: QoS = .atMostOnce,
        retain: Bool = false,
        dup: Bool = false,
        packetID: UInt16? = nil,
        properties: MQTTProperties = .none
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.dup = dup
        self.packetID = packetID
        self.properties = properties
    }
}
