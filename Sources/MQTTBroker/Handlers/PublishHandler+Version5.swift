import MQTTCore
import NIOCore

/// The MQTT 5 part of PUBLISH (MQTT 5.0 3.3.2.3): the topic alias resolved, the properties the message carries on
/// (all but the alias, with the expiry kept as a deadline), the payload format checked, and the reason code the
/// PUBACK or PUBREC reports.
extension PublishHandler {
    /// What an MQTT 5 PUBLISH becomes on its way through the broker.
    struct Version5Form {
        var topic: String
        var properties: MQTTProperties
        var expiresAt: NIODeadline?
        /// The payload claims to be UTF-8 (format indicator 1) and is not.
        var payloadFormatInvalid: Bool
    }

    /// `publish` as the broker routes it, or nil after closing the connection for a broken rule.
    static func version5Form(of publish: PublishPacket, on connection: BrokerConnectionHandler) -> Version5Form? {
        let properties = publish.properties
        // No properties (no alias; the decoder refuses an empty topic without one): the PUBLISH as it came.
        guard !properties.isEmpty else {
            return Version5Form(topic: publish.topic, properties: .none, expiresAt: nil, payloadFormatInvalid: false)
        }
        let core = connection.core
        var topic = publish.topic
        let alias = properties.topicAlias
        if alias != nil || topic.isEmpty {
            switch connection.topicAliases.resolve(topic: topic, alias: alias, maximum: core.configuration.maxTopicAlias) {
            case .success(let resolved): topic = resolved
            case .failure(let violation):
                connection.close(.protocolViolation(violation))
                return nil
            }
        }
        var expiresAt: NIODeadline?
        var forwarded: [MQTTProperty] = []
        forwarded.reserveCapacity(properties.entries.count)
        for entry in properties.entries {
            switch entry {
            case .topicAlias, .subscriptionIdentifier:
                continue  // per connection; and a client may not send identifiers (MQTT-3.3.4-6 is the server's)
            case .messageExpiryInterval(let seconds):
                expiresAt = core.now + .seconds(Int64(seconds))
            default:
                forwarded.append(entry)
            }
        }
        var invalid = false
        if properties.payloadFormatIndicator == 1 {
            invalid = String(validating: publish.payload.readableBytesView, as: UTF8.self) == nil
        }
        return Version5Form(
            topic: topic, properties: MQTTProperties(forwarded), expiresAt: expiresAt, payloadFormatInvalid: invalid)
    }

    /// The reason code of the PUBACK or PUBREC for an MQTT 5 publish (MQTT 5.0 3.4.2.1): not authorized when the
    /// ACL (or `$SYS`) refuses it, no matching subscribers when nobody receives it, as mosquitto reports them.
    static func version5ReasonCode(
        topic: String, routable: Bool, on connection: BrokerConnectionHandler
    ) -> MQTTReasonCode {
        guard routable else { return .notAuthorized }
        return connection.core.hasSubscriber(matching: topic, from: connection) ? .success : .noMatchingSubscribers
    }
}
