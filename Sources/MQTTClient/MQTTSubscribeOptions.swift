public import MQTTCore

/// When the broker sends retained messages for a new subscription (MQTT 5 Retain Handling).
public enum MQTTRetainHandling: UInt8, Sendable, Hashable {
    /// 0: send them at every SUBSCRIBE (the MQTT 3.1.1 behaviour).
    case sendOnSubscribe = 0
    /// 1: send them only if the subscription did not exist before.
    case sendIfNewSubscription = 1
    /// 2: never send them.
    case doNotSend = 2
}

/// MQTT 5 subscription options. The default value is what MQTT 3.1.1 does; anything else needs
/// ``MQTTClientProtocolVersion/v5`` (``MQTTClientError/mqtt5Required(_:)`` otherwise). The client keeps the options
/// with the subscription and sends them again when it restores subscriptions after a reconnect.
public struct MQTTSubscribeOptions: Sendable, Hashable {
    /// No Local: the broker does not send this client the messages it publishes itself.
    public var noLocal: Bool
    /// Retain As Published: forwarded messages keep the retain flag they were published with.
    public var retainAsPublished: Bool
    /// Whether and when retained messages are sent on subscribing.
    public var retainHandling: MQTTRetainHandling
    /// Subscription Identifier (1 to 268,435,455): the broker tags every message delivered through this subscription
    /// with it (``MQTTMessage/subscriptionIdentifiers``).
    public var subscriptionIdentifier: Int?

    /// Creates subscription options; the defaults are MQTT 3.1.1's behaviour.
    public init(
        noLocal: Bool = false, retainAsPublished: Bool = false, retainHandling: MQTTRetainHandling = .sendOnSubscribe,
        subscriptionIdentifier: Int? = nil
    ) {
        self.noLocal = noLocal
        self.retainAsPublished = retainAsPublished
        self.retainHandling = retainHandling
        self.subscriptionIdentifier = subscriptionIdentifier
    }

    /// Whether these are MQTT 3.1.1's defaults (nothing MQTT 5-only is asked for).
    var isDefault: Bool { self == MQTTSubscribeOptions() }

    /// The option bits of the SUBSCRIBE packet (`MQTT_SUB_OPT_*`), without the QoS.
    var optionBits: Int32 {
        (noLocal ? 0x04 : 0) | (retainAsPublished ? 0x08 : 0) | (Int32(retainHandling.rawValue) << 4)
    }

    /// The range the MQTT 5 specification allows for a subscription identifier.
    static let identifierRange = 1...268_435_455
}

/// The broker's answer for one filter of a SUBSCRIBE (one SUBACK entry).
public enum MQTTSubscribeResult: Sendable, Hashable {
    /// Subscribed with this maximum QoS (possibly lower than asked).
    case granted(QoS)
    /// Refused with this reason code: 0x80 at MQTT 3.1.1, any MQTT 5 failure code (0x87 not authorised, …) at 5.
    case refused(MQTTReasonCode)

    /// Maps one SUBACK return code.
    init(code: Int32) {
        if (0...2).contains(code), let qos = QoS(rawValue: UInt8(code)) {
            self = .granted(qos)
        } else {
            self = .refused(MQTTReasonCode(rawValue: UInt8(truncatingIfNeeded: code)))
        }
    }
}
