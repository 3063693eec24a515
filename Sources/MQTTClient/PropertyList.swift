import CMosquitto
import Foundation

/// An owned libmosquitto property list (`mosquitto_property *`), built from Swift values.
///
/// Non-copyable, so exactly one value owns the C list: `deinit` frees it with `mosquitto_property_free_all`, and
/// ``release()`` hands it to libmosquitto for the one call that takes ownership (`mosquitto_will_set_v5`).
/// libmosquitto copies the lists given to `mosquitto_publish_v5`, `mosquitto_subscribe_*` and
/// `mosquitto_connect_bind_v5`; those borrow ``pointer`` and the list is freed here afterwards.
struct PropertyList: ~Copyable {
    private(set) var pointer: OpaquePointer?

    init() {}

    deinit {
        var list = pointer
        mosquitto_property_free_all(&list)
    }

    /// Gives the list up without freeing it (libmosquitto took it).
    consuming func release() -> OpaquePointer? {
        let list = pointer
        discard self
        return list
    }

    mutating func add(_ id: mqtt5_property, byte value: UInt8) throws(MQTTClientError) {
        try check(mosquitto_property_add_byte(&pointer, Int32(id.rawValue), value), id)
    }

    mutating func add(_ id: mqtt5_property, int32 value: UInt32) throws(MQTTClientError) {
        try check(mosquitto_property_add_int32(&pointer, Int32(id.rawValue), value), id)
    }

    mutating func add(_ id: mqtt5_property, varint value: UInt32) throws(MQTTClientError) {
        try check(mosquitto_property_add_varint(&pointer, Int32(id.rawValue), value), id)
    }

    mutating func add(_ id: mqtt5_property, string value: String) throws(MQTTClientError) {
        try check(mosquitto_property_add_string(&pointer, Int32(id.rawValue), value), id)
    }

    mutating func add(_ id: mqtt5_property, binary value: [UInt8]) throws(MQTTClientError) {
        guard value.count <= Int(UInt16.max) else {
            throw .invalidConfiguration("property \(id.rawValue) is longer than 65535 bytes")
        }
        let rc = value.withUnsafeBytes { bytes in
            mosquitto_property_add_binary(&pointer, Int32(id.rawValue), bytes.baseAddress, UInt16(bytes.count))
        }
        try check(rc, id)
    }

    mutating func add(_ property: MQTTUserProperty) throws(MQTTClientError) {
        let id = MQTT_PROP_USER_PROPERTY
        try check(mosquitto_property_add_string_pair(&pointer, Int32(id.rawValue), property.name, property.value), id)
    }

    private func check(_ rc: Int32, _ id: mqtt5_property) throws(MQTTClientError) {
        guard rc == MosquittoError.success else {
            throw .invalidConfiguration("MQTT 5 property \(id.rawValue): \(MosquittoError.message(rc))")
        }
    }
}

extension PropertyList {
    /// The properties of a PUBLISH (or a will).
    init(publish properties: MQTTPublishProperties) throws(MQTTClientError) {
        self.init()
        if let format = properties.payloadFormat { try add(MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, byte: format.rawValue) }
        if let expiry = properties.messageExpiryInterval { try add(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, int32: expiry) }
        if let type = properties.contentType { try add(MQTT_PROP_CONTENT_TYPE, string: type) }
        if let topic = properties.responseTopic {
            guard mosquitto_pub_topic_check2(topic, topic.utf8.count) == MosquittoError.success else {
                throw .invalidTopic(topic)
            }
            try add(MQTT_PROP_RESPONSE_TOPIC, string: topic)
        }
        if let data = properties.correlationData { try add(MQTT_PROP_CORRELATION_DATA, binary: data) }
        for property in properties.userProperties { try add(property) }
    }

    /// The properties of a SUBSCRIBE: only the subscription identifier.
    init(subscribe options: MQTTSubscribeOptions) throws(MQTTClientError) {
        self.init()
        if let identifier = options.subscriptionIdentifier {
            guard MQTTSubscribeOptions.identifierRange.contains(identifier) else {
                throw .invalidConfiguration("subscription identifier \(identifier) is not in 1...268435455")
            }
            try add(MQTT_PROP_SUBSCRIPTION_IDENTIFIER, varint: UInt32(identifier))
        }
    }
}
