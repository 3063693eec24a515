import MQTTCore
import NIOCore

/// What the broker core and the packet handlers ask of persistence: record what a persistent session or the
/// retained store must not lose, and hold an acknowledgement back until what it acknowledges is durable.
///
/// The broker always has one: ``NoPersistence`` when `persistence` is off, which routes and acknowledges at once,
/// or the ``PersistenceStore`` recovered at start. So the publish path has no "is persistence on?" branches.
/// Confined to the core's event loop.
protocol BrokerPersistence: AnyObject {
    /// A persistent session was created by CONNECT (clean session off, no session present).
    func sessionCreated(_ session: BrokerSession)
    /// A persistent session was discarded.
    func sessionRemoved(_ session: BrokerSession)
    /// A client resumed its persistent session, or DISCONNECT changed its Session Expiry Interval.
    func sessionLifetimeChanged(_ session: BrokerSession)
    /// SUBSCRIBE added or replaced a subscription.
    func subscribed(_ session: BrokerSession, to filter: String, qos: QoS)
    /// SUBSCRIBE set the MQTT 5 options of a filter it just subscribed (after ``subscribed(_:to:qos:)``).
    func subscriptionOptionsChanged(_ session: BrokerSession, filter: String, options: SubscriptionOptions)
    /// UNSUBSCRIBE removed a subscription.
    func unsubscribed(_ session: BrokerSession, from filter: String)
    /// The retained store changed.
    func retainedChanged(_ message: BrokerMessage)
    /// A persistent session's client went away; its will waits until `publishAt` unless the session resumes first.
    func delayedWillScheduled(_ session: BrokerSession, will: BrokerMessage, publishAt: NIODeadline)
    /// The session's delayed will was published or cancelled.
    func delayedWillCleared(_ session: BrokerSession)

    /// A recorder for one routed message, or nil when routing it records nothing.
    func routeRecorder(for message: inout BrokerMessage) -> RouteRecorder?
    /// A recorder for a retained message offered to a new subscription, or nil when that records nothing.
    func retainedCopyRecorder(for message: inout BrokerMessage, qos: QoS, session: BrokerSession) -> RouteRecorder?

    /// Routes an inbound PUBLISH and writes `acknowledgement` (PUBACK, PUBREC for a new QoS 2 message, nil at QoS 0)
    /// to `connection`: at once, or once the message is durable when it must be.
    func acceptPublish(
        _ message: consuming BrokerMessage, from session: BrokerSession, routable: Bool,
        acknowledgement: MQTTAcknowledgement?, via connection: BrokerConnectionHandler
    )
    /// Writes `acknowledgement` once everything recorded so far is durable.
    func writeWhenDurable(_ acknowledgement: MQTTAcknowledgement, via connection: BrokerConnectionHandler)
    /// Runs `action` once everything recorded so far is durable (SUBACK, UNSUBACK).
    func whenDurable(_ action: @escaping () -> Void)
    /// PUBREL from the client: forgets the inbound QoS 2 id, then PUBCOMP once the release is durable.
    func releaseInboundQoS2(_ session: BrokerSession, packetID: UInt16, via connection: BrokerConnectionHandler)

    /// The client acknowledged an outbound PUBLISH; recorded before the flow forgets the entry.
    func outboundAcknowledged(_ acknowledgement: OutboundAcknowledgement, packetID: UInt16, session: BrokerSession)
    /// Writes what an outbound-flow event decided (PUBLISH, PUBREL) to the session's connection.
    func performOutbound(_ actions: [OutboundAction], for session: BrokerSession, via connection: BrokerConnectionHandler)
}

/// Persistence off: nothing is recorded, everything is routed and acknowledged at once.
final class NoPersistence: BrokerPersistence {
    func sessionCreated(_ session: BrokerSession) {}
    func sessionRemoved(_ session: BrokerSession) {}
    func sessionLifetimeChanged(_ session: BrokerSession) {}
    func subscribed(_ session: BrokerSession, to filter: String, qos: QoS) {}
    func subscriptionOptionsChanged(_ session: BrokerSession, filter: String, options: SubscriptionOptions) {}
    func unsubscribed(_ session: BrokerSession, from filter: String) {}
    func retainedChanged(_ message: BrokerMessage) {}
    func delayedWillScheduled(_ session: BrokerSession, will: BrokerMessage, publishAt: NIODeadline) {}
    func delayedWillCleared(_ session: BrokerSession) {}

    func routeRecorder(for message: inout BrokerMessage) -> RouteRecorder? { nil }

    func retainedCopyRecorder(for message: inout BrokerMessage, qos: QoS, session: BrokerSession) -> RouteRecorder? {
        nil
    }

    func acceptPublish(
        _ message: consuming BrokerMessage, from session: BrokerSession, routable: Bool,
        acknowledgement: MQTTAcknowledgement?, via connection: BrokerConnectionHandler
    ) {
        // The acknowledgement first: a client subscribed to its own topic gets its PUBACK / PUBREC before the
        // copy of its message, as from mosquitto. Both leave in the same flush.
        if let acknowledgement { connection.writeAcknowledgement(acknowledgement) }
        if routable { connection.core.route(message, from: connection) }
    }

    func writeWhenDurable(_ acknowledgement: MQTTAcknowledgement, via connection: BrokerConnectionHandler) {
        connection.writeAcknowledgement(acknowledgement)
    }

    func whenDurable(_ action: @escaping () -> Void) {
        action()
    }

    func releaseInboundQoS2(_ session: BrokerSession, packetID: UInt16, via connection: BrokerConnectionHandler) {
        session.inboundQoS2.releaseReceived(packetID: packetID)
        connection.writeAcknowledgement(MQTTAcknowledgement(.pubcomp, packetID: packetID))
    }

    func outboundAcknowledged(_ acknowledgement: OutboundAcknowledgement, packetID: UInt16, session: BrokerSession) {}

    func performOutbound(_ actions: [OutboundAction], for session: BrokerSession, via connection: BrokerConnectionHandler) {
        connection.write(actions)
    }
}
