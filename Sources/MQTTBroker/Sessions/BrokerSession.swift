import MQTTCore
import NIOCore

/// Identifies a session inside one broker core; cheaper to hash than the client identifier and never reused.
struct SessionKey: Hashable, Sendable {
    let rawValue: UInt64
}

/// The state the broker keeps for one client identifier (MQTT 3.1.1 section 4.1): its subscriptions, the
/// outbound QoS 1/2 flow and the inbound QoS 2 identifiers, plus the connection currently attached, if any.
///
/// The protocol logic lives in the value-type state machines it holds; this class only gives the session an
/// identity the subscription index can point at. Confined to the broker's event loop (hence its
/// `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class BrokerSession {
    let key: SessionKey
    let clientID: String
    /// Clean session flag of the connection that created or last resumed the session.
    @exclusivity(unchecked) var cleanSession: Bool
    /// Topic filter -> granted QoS.
    @exclusivity(unchecked) var subscriptions: [UTF8Key<String>: QoS] = [:]
    /// MQTT 5 options of the filters subscribed with other than the defaults (``SubscriptionOptions``); empty for
    /// 3.1.1 sessions, which routing checks first.
    @exclusivity(unchecked) var subscriptionOptions: [UTF8Key<String>: SubscriptionOptions] = [:]
    /// The protocol level of the connection that created or last resumed the session.
    @exclusivity(unchecked) var protocolVersion: MQTTProtocolVersion = .v3_1_1
    /// MQTT 5 Session Expiry Interval in seconds (0 ends the session with its connection; `UInt32.max` never
    /// expires). 3.1.1 sessions keep 0 and use ``cleanSession``.
    @exclusivity(unchecked) var expiryInterval: UInt32 = 0
    /// MQTT 5 state most sessions never have (see ``SessionExtras``); nil until some is set.
    @exclusivity(unchecked) var extras: SessionExtras?
    @exclusivity(unchecked) var outbound: OutboundFlow
    @exclusivity(unchecked) var inboundQoS2 = InboundQoS2Tracker()
    /// The connection attached to the session; nil while the client is offline.
    @exclusivity(unchecked) var connection: BrokerConnectionHandler?
    /// What the client attached last may publish, subscribe to and receive (set at every CONNECT).
    @exclusivity(unchecked) var accessPolicy = ClientAccessPolicy.unrestricted
    /// The read batch in which the core last reported this session's progress to the back-pressure state
    /// (``BackpressureController/noteProgress(of:core:)``): the time the batch began, the one clock every report in it shares.
    @exclusivity(unchecked) var progressNotedAt = NIODeadline.uptimeNanoseconds(0)
    /// The read batch in which the core last reported this session's queue below the high watermark (each
    /// such report may resume one publisher): at most one per batch.
    @exclusivity(unchecked) var drainNotedAt = NIODeadline.uptimeNanoseconds(0)

    init(key: SessionKey, clientID: String, cleanSession: Bool, outbound: OutboundFlow) {
        self.key = key
        self.clientID = clientID
        self.cleanSession = cleanSession
        self.outbound = outbound
    }
}

/// A will waiting for its MQTT 5 Will Delay Interval (MQTT 5.0 3.1.3.2.2). A class, so that a session without one
/// holds a nil pointer rather than room for a message and a timer.
final class DelayedWill {
    /// Publishes ``message`` when the delay has passed.
    let task: Scheduled<Void>
    /// The will, as it will be routed.
    let message: BrokerMessage
    /// When ``task`` publishes it (kept for snapshots).
    let publishAt: NIODeadline

    init(task: Scheduled<Void>, message: BrokerMessage, publishAt: NIODeadline) {
        self.task = task
        self.message = message
        self.publishAt = publishAt
    }
}
