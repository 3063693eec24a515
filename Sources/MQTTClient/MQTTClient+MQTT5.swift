public import MQTTCore

extension MQTTClient {
    /// What the broker answered in the CONNACK of the current (or last) connection: session present and, at
    /// MQTT 5, its properties (assigned client identifier, server keep alive, receive maximum, maximum packet size,
    /// topic alias maximum, maximum QoS, retain available …). `nil` before the first successful connect.
    public var connAck: MQTTConnAckInfo? { engine.connAck }

    /// Subscribes to several filters in one SUBSCRIBE, with one QoS and option set for all, and returns the
    /// broker's answer per filter, in order: a refused filter does not throw, it is ``MQTTSubscribeResult/refused(_:)``.
    /// Granted filters are restored after a reconnect like those of ``subscribe(_:qos:options:)``.
    /// - Throws: ``MQTTClientError/invalidTopic(_:)``, ``MQTTClientError/notConnected``,
    ///   ``MQTTClientError/mqtt5Required(_:)`` for non-default options before MQTT 5.
    public func subscribe(
        _ filters: [String], qos: QoS, options: MQTTSubscribeOptions = MQTTSubscribeOptions()
    ) async throws(MQTTClientError) -> [MQTTSubscribeResult] {
        try await engine.subscribe(filters: filters, qos: qos, options: options)
    }

    /// MQTT 5 request/response: publishes a request with a fresh correlation id and the Response Topic
    /// `<inbox>/reply` (``MQTTClientConfiguration/inboxTopic``; subscribed at QoS 1 on first use), and returns the
    /// response another client sends with ``respond(to:payload:qos:properties:)``. Responses are not delivered to
    /// the message streams.
    ///
    /// At most ``MQTTClientConfiguration/maxOutstandingRequests`` requests wait at once. `properties` may carry
    /// anything but the response topic and correlation data, which this call sets.
    /// - Throws: ``MQTTClientError/timeout`` when no response arrived within `timeout` (counted from the call),
    ///   ``MQTTClientError/tooManyOutstandingRequests(limit:)``, ``MQTTClientError/mqtt5Required(_:)`` before
    ///   MQTT 5, and whatever the publish throws.
    public func request(
        topic: String, payload: [UInt8], qos: QoS = .atLeastOnce,
        properties: MQTTPublishProperties = MQTTPublishProperties(), timeout: Duration = .seconds(10)
    ) async throws(MQTTClientError) -> MQTTMessage {
        try await engine.request(topic: topic, payload: payload, qos: qos, properties: properties, timeout: timeout)
    }

    /// MQTT 5 request/response, responder side: publishes `payload` to the request's Response Topic with its
    /// Correlation Data (and `properties`).
    /// - Throws: ``MQTTClientError/noResponseTopic`` when `request` has none, ``MQTTClientError/mqtt5Required(_:)``
    ///   before MQTT 5, and whatever the publish throws.
    public func respond(
        to request: MQTTMessage, payload: [UInt8], qos: QoS = .atLeastOnce,
        properties: MQTTPublishProperties = MQTTPublishProperties()
    ) async throws(MQTTClientError) {
        try await engine.respond(to: request, payload: payload, qos: qos, properties: properties)
    }
}
