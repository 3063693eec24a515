import MQTTCore
import NIOCore

/// An application message as the broker routes it: what a PUBLISH (or a will, or a `$SYS` update) carries,
/// independent of the packet identifier and flags of any one delivery.
struct BrokerMessage: Sendable, Hashable {
    /// The topic name the message was published to.
    var topic: String
    /// The payload; a slice of the buffer it arrived in, never copied while routing.
    var payload: ByteBuffer
    /// The QoS it was published with; each delivery uses `min(qos, granted QoS)`.
    var qos: QoS
    /// The RETAIN flag it was published with.
    var retain: Bool
    /// [persist] The id of the message's record in the persistence store; 0 when it has none.
    var storeID: UInt64 = 0
}
