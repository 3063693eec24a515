import MQTTCore
import NIOCore

/// A will waiting for its Will Delay Interval, as stored (``PersistentRecord/delayedWill(clientID:will:)``): the
/// message it becomes and when it is due, both in wall-clock time so that a restart keeps the time left.
struct StoredWill: Sendable, Hashable {
    var topic: String
    var qos: QoS
    var retain: Bool
    var payload: ByteBuffer
    /// The will's MQTT 5 properties as they will be published (without the Will Delay Interval).
    var properties: MQTTProperties
    /// When the will message expires (its Message Expiry Interval); nil when it never does.
    var expiresAt: WallClockTime?
    /// When the delay ends and the will is published, unless the session resumes or ends first.
    var publishAt: WallClockTime
}

extension StoredWill {
    /// The delayed will `message`, due at `deadline`, as stored; times converted with `clock`.
    init(_ message: BrokerMessage, publishAt deadline: NIODeadline, clock: PersistenceClock) {
        self.init(
            topic: message.topic, qos: message.qos, retain: message.retain, payload: message.payload,
            properties: message.properties.withoutSubscriptionIdentifiers,
            expiresAt: message.expiresAt.map { clock.wallTime(of: $0) }, publishAt: clock.wallTime(of: deadline))
    }

    /// The will as the broker routes it, and its uptime deadline (now, when it is already due).
    func restored(_ clock: PersistenceClock) -> (message: BrokerMessage, publishAt: NIODeadline) {
        let message = BrokerMessage(
            topic: topic, payload: payload, qos: qos, retain: retain, properties: properties,
            expiresAt: expiresAt.map { clock.deadline(of: $0) })
        return (message, clock.deadline(of: publishAt))
    }
}
