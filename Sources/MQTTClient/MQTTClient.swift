public import MQTTCore

/// An MQTT client over libmosquitto.
///
/// All methods may be called from any task. Incoming messages and connection states are delivered through
/// `AsyncStream`s; every call of ``messages()`` or ``stateChanges()`` returns a new, independent stream.
///
/// Reconnection follows ``MQTTClientConfiguration/reconnect``: after an established connection breaks, the client
/// waits (1 s, 2 s, 4 s … 64 s with jitter by default), reconnects, and restores its subscriptions if the broker
/// reports no session. QoS 1/2 publishes made while offline are kept (bounded by `offlineQueueLimit`) and sent
/// after the reconnect; their `publish` calls return once acknowledged.
///
/// No double sends: `mosquitto_publish` answers `MOSQ_ERR_NO_CONN` while offline but keeps QoS 1/2 messages in its
/// own queue and re-sends them after the next CONNACK. The client therefore never publishes such a message again
/// itself; it only remembers the message id and completes the caller on the matching `on_publish`. The offline limit
/// is enforced before the message reaches libmosquitto. After `disconnect()` or a final failure (first connect
/// failed, reconnect disabled) waiting publishes fail with `notConnected`; libmosquitto may still hold QoS 1/2 ones
/// and would send them if `connect()` is called again on the same client.
///
/// The client uses its own network thread running libmosquitto's socket I/O (not `mosquitto_loop_start`, whose
/// built-in reconnect cannot be switched off). Releasing the last reference drops the connection without DISCONNECT, like a
/// crash: the broker then publishes the will. Call ``disconnect()`` first for a clean goodbye.
public final class MQTTClient: Sendable {
    let engine: ClientEngine

    /// Creates a client; no network activity happens until ``connect()``.
    /// - Throws: ``MQTTClientError/invalidConfiguration(_:)`` for an empty client identifier, unusable TLS files,
    ///   or other settings libmosquitto rejects.
    public init(configuration: MQTTClientConfiguration) throws(MQTTClientError) {
        engine = try ClientEngine(configuration: configuration)
    }

    deinit {
        engine.shutdown()
    }

    /// The configuration this client was created with.
    public var configuration: MQTTClientConfiguration { engine.configuration }

    /// The current connection state; `nil` before the first ``connect()``.
    public var state: MQTTConnectionState? { engine.currentState }

    /// Connects to the broker and returns once it accepted the connection (CONNACK 0).
    ///
    /// If the first attempt fails, this throws and the client stays disconnected (no automatic retry); automatic
    /// reconnection only applies to a connection that was established before. Calling it while connected returns
    /// at once; calling it while a (re)connection is under way waits for that connection.
    public func connect() async throws(MQTTClientError) {
        try await engine.connect()
    }

    /// Disconnects cleanly: DISCONNECT is sent (so the broker discards the will), no reconnect follows, and
    /// operations still waiting fail with ``MQTTClientError/notConnected``. Returns once the state is `.closed`.
    public func disconnect() async {
        await engine.disconnect()
    }

    /// Subscribes to a topic filter and returns the QoS the broker granted.
    ///
    /// `options` (MQTT 5: no local, retain as published, retain handling, subscription identifier) are kept with
    /// the subscription and sent again when it is restored after a reconnect.
    /// - Throws: ``MQTTClientError/subscriptionRefused(filter:)`` when the broker answers 0x80,
    ///   ``MQTTClientError/notAuthorized`` or ``MQTTClientError/reasonCode(_:reasonString:)`` for another MQTT 5
    ///   failure code, ``MQTTClientError/invalidTopic(_:)`` for a malformed filter,
    ///   ``MQTTClientError/notConnected`` when offline, ``MQTTClientError/mqtt5Required(_:)`` for non-default
    ///   options before MQTT 5.
    @discardableResult
    public func subscribe(
        _ filter: String, qos: QoS, options: MQTTSubscribeOptions = MQTTSubscribeOptions()
    ) async throws(MQTTClientError) -> QoS {
        try await engine.subscribe(filter, qos: qos, options: options)
    }

    /// Unsubscribes from a topic filter; returns on UNSUBACK.
    public func unsubscribe(_ filter: String) async throws(MQTTClientError) {
        try await engine.unsubscribe(filter)
    }

    /// Publishes a message. Returns when handed off as the QoS promises: QoS 0 once queued for the socket (it
    /// waits only while `qos0QueueLimit` earlier QoS 0 messages are not yet written), QoS 1 on PUBACK, QoS 2 on
    /// PUBCOMP. A QoS 0 message still queued when the connection drops is lost, as "at most once" allows.
    ///
    /// At MQTT 5, `properties` travel with the message, and a PUBACK / PUBREC with a failure reason code fails the
    /// call (0x87 as ``MQTTClientError/notAuthorized``, others as ``MQTTClientError/reasonCode(_:reasonString:)``);
    /// 0x10 "no matching subscribers" is a success.
    ///
    /// While disconnected (but reconnecting), QoS 1/2 messages are queued up to `offlineQueueLimit` and this call
    /// waits for their acknowledgement after the reconnect; QoS 0 messages fail with ``MQTTClientError/notConnected``.
    /// - Throws: ``MQTTClientError/offlineQueueFull`` beyond the offline limit, ``MQTTClientError/invalidTopic(_:)``
    ///   for a malformed topic, ``MQTTClientError/notConnected`` after `disconnect()` or a final connection loss,
    ///   ``MQTTClientError/mqtt5Required(_:)`` for properties before MQTT 5.
    public func publish(
        topic: String, payload: [UInt8], qos: QoS = .atMostOnce, retain: Bool = false,
        properties: MQTTPublishProperties = MQTTPublishProperties()
    ) async throws(MQTTClientError) {
        try await engine.publish(topic: topic, payload: payload, qos: qos, retain: retain, properties: properties)
    }

    /// A new independent stream of every incoming message (each live stream receives every message).
    /// The stream buffers without limit; it ends when the client is deallocated.
    public func messages() -> AsyncStream<MQTTMessage> {
        engine.messageStream(filter: nil)
    }

    /// A new independent stream of the incoming messages whose topic matches `filter` (MQTT wildcards `+` and `#`).
    public func messages(matching filter: String) -> AsyncStream<MQTTMessage> {
        engine.messageStream(filter: filter)
    }

    /// A new independent stream of connection states, starting with the current state (if `connect()` was called).
    public func stateChanges() -> AsyncStream<MQTTConnectionState> {
        engine.stateStream()
    }
}
