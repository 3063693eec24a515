public import MQTTClient

/// The MQTT 5 properties the chat layer puts on what it publishes, so that any MQTT 5 tool can tell what a payload
/// is without guessing: every envelope carries the content type ``envelopeContentType``, payload format 0 (bytes)
/// and the user property ``schemaVersionProperty`` = ``schemaVersion``.
public enum ChatWireProperties {
    /// The Content Type of every chat publish: a protobuf `mqttchat.v1.Envelope`.
    public static let envelopeContentType = "application/x-protobuf; messageType=mqttchat.v1.Envelope"
    /// The Content Type of a room history response: varint-length-prefixed envelopes (``EnvelopeStreamDecoder``).
    public static let delimitedEnvelopesContentType =
        "application/x-protobuf; messageType=mqttchat.v1.Envelope; delimited=true"
    /// The name of the user property that carries the envelope schema version.
    public static let schemaVersionProperty = "mqttchat-schema"
    /// The envelope schema version (the `v1` of the protobuf package `mqttchat.v1`).
    public static let schemaVersion = "1"

    /// The properties of a chat publish of an envelope, expiring after `expiry` seconds if given.
    public static func envelope(expiry: UInt32? = nil) -> MQTTPublishProperties {
        MQTTPublishProperties(
            payloadFormat: .bytes, messageExpiryInterval: expiry, contentType: envelopeContentType,
            userProperties: [MQTTUserProperty(schemaVersionProperty, schemaVersion)])
    }

    /// The properties of a room history response holding `count` envelopes.
    static func historyResponse(count: Int) -> MQTTPublishProperties {
        MQTTPublishProperties(
            payloadFormat: .bytes, contentType: delimitedEnvelopesContentType,
            userProperties: [
                MQTTUserProperty(schemaVersionProperty, schemaVersion),
                MQTTUserProperty(RoomHistoryQuery.countProperty, String(count)),
            ])
    }
}
