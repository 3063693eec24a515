import MQTTCore
import NIOCore

/// An application message as the broker routes it: what a PUBLISH (or a will, or a `$SYS` update) carries,
/// independent of the packet identifier and flags of any one delivery.
struct BrokerMessage: Sendable, Hashable {
    /// The topic name the message was published to.
    var topic: String
    /// The payload: a slice of the buffer it arrived in, or its own copy once the message is kept (see
    /// ``compactForKeeping()``).
    var payload: ByteBuffer
    /// The QoS it was published with; each delivery uses `min(qos, granted QoS)`.
    var qos: QoS
    /// The RETAIN flag it was published with.
    var retain: Bool
    /// The id of the message's record in the persistence store; 0 when it has none.
    var storeID: UInt64 = 0
    /// The MQTT 5 properties forwarded with the message (MQTT 5.0 3.3.2.3): what its publisher sent, less the topic
    /// alias (per connection) and the Message Expiry Interval (kept as ``expiresAt``, sent as what remains).
    /// Empty for a message from an MQTT 3.1.1 client; MQTT 3.1.1 subscribers never see them.
    ///
    /// Kept in a box that is nil when empty: a message is copied several times on its way (into each session's
    /// flow, each delivery), and an array field, even an empty one, costs a retain and a release per copy.
    var properties: MQTTProperties {
        get { propertyBox?.properties ?? .none }
        set { propertyBox = newValue.isEmpty ? nil : PropertyBox(newValue) }
    }
    private var propertyBox: PropertyBox?
    /// When the message expires (MQTT 5.0 3.3.2.3.3): it is not delivered after that, and each copy says how many
    /// seconds it has left. Nil when it never expires.
    var expiresAt: NIODeadline? = nil

    init(
        topic: String, payload: ByteBuffer, qos: QoS, retain: Bool, storeID: UInt64 = 0,
        properties: MQTTProperties = .none, expiresAt: NIODeadline? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.storeID = storeID
        self.expiresAt = expiresAt
        self.properties = properties
    }

    /// Slack above which a kept payload is copied out of the buffer it arrived in.
    static let compactionSlack = 256

    /// The message with a payload that owns no more storage than it needs.
    ///
    /// A decoded payload is a slice of the socket's read buffer, and a slice keeps the whole buffer alive (up to
    /// 64 KiB, shared with every packet of that read). A message delivered at once lets go of it within the loop
    /// tick, but one that is kept — queued for a session, in flight awaiting an acknowledgement, retained — would pin
    /// the read buffer for as long as it is kept, and make `max_queued_*` bounds understate the memory they allow.
    /// Such messages get their own exact-size copy (a copy of the payload's bytes, once per publish, not per
    /// subscriber).
    ///
    /// In place: routing compacts the message it was handed, so making a compacted copy would copy the whole message
    /// (topic and payload retained, then released) on every publish.
    mutating func compactForKeeping() {
        guard payload.storageCapacity > payload.readableBytes + Self.compactionSlack else { return }
        var buffer = ByteBufferAllocator().buffer(capacity: payload.readableBytes)
        buffer.writeImmutableBuffer(payload)
        payload = buffer
    }
}

extension BrokerMessage {
    /// Whether the message has expired at `now` (MQTT 5.0 3.3.2.3.3).
    func hasExpired(at now: NIODeadline) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }

    /// The seconds left before expiry at `now`, rounded up (a message with 0.2 s left is still sent as 1 s).
    func secondsLeft(at now: NIODeadline) -> UInt32? {
        guard let expiresAt else { return nil }
        guard expiresAt > now else { return 0 }
        let nanoseconds = expiresAt.uptimeNanoseconds - now.uptimeNanoseconds
        return UInt32(clamping: (nanoseconds + 999_999_999) / 1_000_000_000)
    }
}

/// A message's MQTT 5 properties, shared by its copies (``BrokerMessage/properties``).
final class PropertyBox: Sendable, Hashable {
    let properties: MQTTProperties

    init(_ properties: MQTTProperties) {
        self.properties = properties
    }

    static func == (lhs: PropertyBox, rhs: PropertyBox) -> Bool { lhs.properties == rhs.properties }

    func hash(into hasher: inout Hasher) { hasher.combine(properties) }
}
