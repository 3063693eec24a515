/// One MQTT 5 user property: a name/value pair of UTF-8 strings. A packet may carry many, names may repeat, and
/// their order is kept end to end.
public struct MQTTUserProperty: Sendable, Hashable {
    /// The property name.
    public var name: String
    /// The property value.
    public var value: String

    /// Creates a user property.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// What the payload of a message is, as announced by the MQTT 5 Payload Format Indicator.
public enum MQTTPayloadFormat: UInt8, Sendable, Hashable {
    /// Unspecified bytes (indicator 0).
    case bytes = 0
    /// UTF-8 encoded character data (indicator 1); brokers may check it.
    case utf8 = 1
}

/// The MQTT 5 properties of an application message (PUBLISH, and the will). All of them are optional; an empty
/// value sends none. They need ``MQTTClientProtocolVersion/v5``: at 3.1.1 a non-empty value is refused with
/// ``MQTTClientError/mqtt5Required(_:)``.
public struct MQTTPublishProperties: Sendable, Hashable {
    /// Payload Format Indicator.
    public var payloadFormat: MQTTPayloadFormat?
    /// Message Expiry Interval in seconds: the broker drops the message if it cannot deliver it in time. A received
    /// message carries what is left of the interval.
    public var messageExpiryInterval: UInt32?
    /// Content Type, for example a MIME type.
    public var contentType: String?
    /// Response Topic: where the receiver should publish its response (see ``MQTTClient/request(topic:payload:qos:properties:timeout:)``).
    public var responseTopic: String?
    /// Correlation Data: lets a requester match a response to its request (at most 65535 bytes).
    public var correlationData: [UInt8]?
    /// User properties, in order; names may repeat.
    public var userProperties: [MQTTUserProperty]

    /// Creates publish properties; every argument defaults to "not sent".
    public init(
        payloadFormat: MQTTPayloadFormat? = nil, messageExpiryInterval: UInt32? = nil, contentType: String? = nil,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = []
    ) {
        self.payloadFormat = payloadFormat
        self.messageExpiryInterval = messageExpiryInterval
        self.contentType = contentType
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.userProperties = userProperties
    }

    /// Whether no property is set.
    public var isEmpty: Bool {
        payloadFormat == nil && messageExpiryInterval == nil && contentType == nil && responseTopic == nil
            && correlationData == nil && userProperties.isEmpty
    }
}
