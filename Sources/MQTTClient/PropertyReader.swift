import CMosquitto
import Foundation
import MQTTCore

/// Copies a libmosquitto property list (borrowed from a callback, freed when it returns) into Swift values.
/// Properties are visited in wire order, so repeated ones (user properties, subscription identifiers) keep it.
enum PropertyReader {
    /// One property's identifier and value.
    enum Value {
        case byte(UInt8), int16(UInt16), int32(UInt32), varint(UInt32), string(String), binary([UInt8])
        case pair(String, String)
    }

    /// Every property of `list` in order.
    static func entries(_ list: OpaquePointer?) -> [(id: Int32, value: Value)] {
        var result: [(id: Int32, value: Value)] = []
        var current = list
        while let property = current {
            let id = mosquitto_property_identifier(property)
            if let value = read(property, id) { result.append((id, value)) }
            current = mosquitto_property_next(property)
        }
        return result
    }

    private static func read(_ property: OpaquePointer, _ id: Int32) -> Value? {
        switch mqtt5_property(rawValue: UInt32(bitPattern: id)) {
        case MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, MQTT_PROP_REQUEST_PROBLEM_INFORMATION, MQTT_PROP_MAXIMUM_QOS,
            MQTT_PROP_RETAIN_AVAILABLE, MQTT_PROP_REQUEST_RESPONSE_INFORMATION,
            MQTT_PROP_WILDCARD_SUB_AVAILABLE, MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE, MQTT_PROP_SHARED_SUB_AVAILABLE:
            var value: UInt8 = 0
            return mosquitto_property_read_byte(property, id, &value, false) == nil ? nil : .byte(value)
        case MQTT_PROP_SERVER_KEEP_ALIVE, MQTT_PROP_RECEIVE_MAXIMUM, MQTT_PROP_TOPIC_ALIAS_MAXIMUM,
            MQTT_PROP_TOPIC_ALIAS:
            var value: UInt16 = 0
            return mosquitto_property_read_int16(property, id, &value, false) == nil ? nil : .int16(value)
        case MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, MQTT_PROP_SESSION_EXPIRY_INTERVAL, MQTT_PROP_WILL_DELAY_INTERVAL,
            MQTT_PROP_MAXIMUM_PACKET_SIZE:
            var value: UInt32 = 0
            return mosquitto_property_read_int32(property, id, &value, false) == nil ? nil : .int32(value)
        case MQTT_PROP_SUBSCRIPTION_IDENTIFIER:
            var value: UInt32 = 0
            return mosquitto_property_read_varint(property, id, &value, false) == nil ? nil : .varint(value)
        case MQTT_PROP_CORRELATION_DATA, MQTT_PROP_AUTHENTICATION_DATA:
            var value: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            guard mosquitto_property_read_binary(property, id, &value, &length, false) != nil else { return nil }
            defer { free(value) }
            return .binary(value.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? [])
        case MQTT_PROP_USER_PROPERTY:
            var name: UnsafeMutablePointer<CChar>?
            var value: UnsafeMutablePointer<CChar>?
            guard mosquitto_property_read_string_pair(property, id, &name, &value, false) != nil else { return nil }
            defer {
                free(name)
                free(value)
            }
            return .pair(name.map { String(cString: $0) } ?? "", value.map { String(cString: $0) } ?? "")
        default:
            var value: UnsafeMutablePointer<CChar>?
            guard mosquitto_property_read_string(property, id, &value, false) != nil else { return nil }
            defer { free(value) }
            return .string(value.map { String(cString: $0) } ?? "")
        }
    }

    /// The PUBLISH properties and subscription identifiers of a received message.
    static func message(_ list: OpaquePointer?) -> (MQTTPublishProperties, [Int]) {
        var properties = MQTTPublishProperties()
        var identifiers: [Int] = []
        for (id, value) in entries(list) {
            switch (mqtt5_property(rawValue: UInt32(bitPattern: id)), value) {
            case (MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, .byte(let format)):
                properties.payloadFormat = MQTTPayloadFormat(rawValue: format)
            case (MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, .int32(let seconds)): properties.messageExpiryInterval = seconds
            case (MQTT_PROP_CONTENT_TYPE, .string(let type)): properties.contentType = type
            case (MQTT_PROP_RESPONSE_TOPIC, .string(let topic)): properties.responseTopic = topic
            case (MQTT_PROP_CORRELATION_DATA, .binary(let data)): properties.correlationData = data
            case (MQTT_PROP_USER_PROPERTY, .pair(let name, let value)):
                properties.userProperties.append(MQTTUserProperty(name, value))
            case (MQTT_PROP_SUBSCRIPTION_IDENTIFIER, .varint(let identifier)): identifiers.append(Int(identifier))
            default: break
            }
        }
        return (properties, identifiers)
    }

    /// The Reason String of an acknowledgement or DISCONNECT, if any.
    static func reasonString(_ list: OpaquePointer?) -> String? {
        for (id, value) in entries(list) {
            if id == Int32(MQTT_PROP_REASON_STRING.rawValue), case .string(let text) = value { return text }
        }
        return nil
    }

    /// The CONNACK properties.
    static func connAck(_ list: OpaquePointer?, sessionPresent: Bool) -> MQTTConnAckInfo {
        var info = MQTTConnAckInfo(sessionPresent: sessionPresent)
        for (id, value) in entries(list) {
            switch (mqtt5_property(rawValue: UInt32(bitPattern: id)), value) {
            case (MQTT_PROP_ASSIGNED_CLIENT_IDENTIFIER, .string(let text)): info.assignedClientIdentifier = text
            case (MQTT_PROP_SERVER_KEEP_ALIVE, .int16(let seconds)): info.serverKeepAlive = seconds
            case (MQTT_PROP_RECEIVE_MAXIMUM, .int16(let count)): info.receiveMaximum = count
            case (MQTT_PROP_MAXIMUM_PACKET_SIZE, .int32(let size)): info.maximumPacketSize = size
            case (MQTT_PROP_TOPIC_ALIAS_MAXIMUM, .int16(let count)): info.topicAliasMaximum = count
            case (MQTT_PROP_MAXIMUM_QOS, .byte(let qos)): info.maximumQoS = QoS(rawValue: qos)
            case (MQTT_PROP_RETAIN_AVAILABLE, .byte(let flag)): info.retainAvailable = flag != 0
            case (MQTT_PROP_WILDCARD_SUB_AVAILABLE, .byte(let flag)): info.wildcardSubscriptionAvailable = flag != 0
            case (MQTT_PROP_SUBSCRIPTION_ID_AVAILABLE, .byte(let flag)):
                info.subscriptionIdentifiersAvailable = flag != 0
            case (MQTT_PROP_SHARED_SUB_AVAILABLE, .byte(let flag)): info.sharedSubscriptionAvailable = flag != 0
            case (MQTT_PROP_SESSION_EXPIRY_INTERVAL, .int32(let seconds)): info.sessionExpiryInterval = seconds
            case (MQTT_PROP_RESPONSE_INFORMATION, .string(let text)): info.responseInformation = text
            case (MQTT_PROP_SERVER_REFERENCE, .string(let text)): info.serverReference = text
            case (MQTT_PROP_REASON_STRING, .string(let text)): info.reasonString = text
            case (MQTT_PROP_USER_PROPERTY, .pair(let name, let value)):
                info.userProperties.append(MQTTUserProperty(name, value))
            default: break
            }
        }
        return info
    }
}
