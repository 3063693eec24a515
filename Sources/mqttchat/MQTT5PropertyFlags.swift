import ArgumentParser
import MQTTClient

/// The MQTT 5 properties given with mosquitto's `-D COMMAND IDENTIFIER VALUE` (`-D COMMAND user-property NAME VALUE`),
/// checked with mosquitto's rules and words: the command and property names (case-insensitive), whether the property
/// belongs to that command (`mosquitto_property_check_command`), and the value's range. Properties that mosquitto
/// accepts but `MQTTClient` cannot send are refused by name rather than dropped silently.
struct MQTT5PropertyFlags: Sendable, Equatable {
    /// `-D connect session-expiry-interval N` (the same as `-x N`).
    var sessionExpiryInterval: UInt32?
    /// `-D publish …`: the properties of every message `publish` sends.
    var publish = MQTTPublishProperties()
    /// `-D will …` except the delay: the will message's properties.
    var will = MQTTPublishProperties()
    /// `-D will will-delay-interval N`.
    var willDelayInterval: UInt32?
    /// `-D subscribe subscription-identifier N`.
    var subscriptionIdentifier: Int?

    /// Which mqttchat command the properties are for: each sends only some packets.
    enum Command: Sendable {
        case publish, subscribe
    }

    /// No properties.
    init() {}

    /// Parses the values of every `-D` in order (ArgumentParser hands them over as one flat list; the property name
    /// tells how many values follow it, as in mosquitto's `cfg_parse_property`).
    init(_ tokens: [String], for command: Command) throws(ValidationError) {
        var rest = tokens[...]
        while !rest.isEmpty {
            guard rest.count >= 3 else { throw Self.notEnough }
            let commandName = rest.removeFirst(), propertyName = rest.removeFirst()
            guard let packet = Packet(rawValue: commandName.lowercased()) else {
                throw ValidationError(
                    "Invalid command given in --property argument. '\(commandName)' is none of connect, publish, "
                        + "subscribe, will, unsubscribe, disconnect, auth, connack, puback, pubrec, pubrel, pubcomp, suback, unsuback.")
            }
            guard let property = Property(rawValue: propertyName.lowercased()) else {
                throw ValidationError(
                    "Invalid property name given in --property argument. '\(propertyName)' is no MQTT 5 property name "
                        + "(e.g. user-property, content-type, message-expiry-interval).")
            }
            guard property.packets.contains(packet) else {
                throw ValidationError("\(propertyName) property not allowed for \(commandName) in --property argument.")
            }
            var name: String?
            if property == .userProperty {
                guard rest.count >= 2 else { throw Self.notEnough }
                name = rest.removeFirst()
            }
            let value = rest.removeFirst()
            try add(property, name: name, value: value, to: packet, for: command)
        }
    }

    private static let notEnough = ValidationError("--property argument given but not enough arguments specified.")

    private mutating func add(
        _ property: Property, name: String?, value: String, to packet: Packet, for command: Command
    ) throws(ValidationError) {
        let label = "\(packet.rawValue) \(property.rawValue)"
        func unsupported(_ why: String) -> ValidationError {
            ValidationError("-D \(label): not supported by mqttchat \(command) (\(why)).")
        }
        switch (packet, command) {
        case (.connect, _), (.will, _), (.publish, .publish), (.subscribe, .subscribe):
            break
        case (.publish, .subscribe):
            throw unsupported("it publishes nothing")
        case (.subscribe, .publish):
            throw unsupported("it subscribes to nothing")
        case (.unsubscribe, _), (.disconnect, _):
            throw unsupported("it sends no \(packet.rawValue.uppercased()) properties")
        default:  // acknowledgements and AUTH: mosquitto's tools refuse them too
            throw ValidationError("\(property.rawValue) property not supported for \(packet.rawValue) in --property argument.")
        }
        switch (packet, property) {
        case (.publish, .subscriptionIdentifier):  // only the broker sets it on a PUBLISH
            throw ValidationError("\(property.rawValue) property not supported for \(packet.rawValue) in --property argument.")
        case (.connect, .sessionExpiryInterval):
            sessionExpiryInterval = UInt32(try Self.number(value, property, max: Int(UInt32.max)))
        case (.subscribe, .subscriptionIdentifier):
            let identifier = try Self.number(value, property, max: Int(UInt32.max))
            guard (1...268_435_455).contains(identifier) else {
                throw ValidationError("subscription-identifier must be 1 to 268435455, got \(identifier).")
            }
            subscriptionIdentifier = identifier
        case (.will, .willDelayInterval):
            willDelayInterval = UInt32(try Self.number(value, property, max: Int(UInt32.max)))
        case (.publish, _), (.will, _):
            if packet == .publish {
                try Self.set(property, name: name, value: value, in: &publish, unsupported: unsupported)
            } else {
                try Self.set(property, name: name, value: value, in: &will, unsupported: unsupported)
            }
        default:
            throw unsupported("MQTTClient cannot send it")
        }
    }

    /// Sets one application-message property (publish or will).
    private static func set(
        _ property: Property, name: String?, value: String, in properties: inout MQTTPublishProperties,
        unsupported: (String) -> ValidationError
    ) throws(ValidationError) {
        switch property {
        case .payloadFormatIndicator:
            let number = try Self.number(value, property, max: Int(UInt8.max))
            guard let format = MQTTPayloadFormat(rawValue: UInt8(number)) else {
                throw ValidationError("payload-format-indicator must be 0 (bytes) or 1 (UTF-8), got \(number).")
            }
            properties.payloadFormat = format
        case .messageExpiryInterval:
            properties.messageExpiryInterval = UInt32(try Self.number(value, property, max: Int(UInt32.max)))
        case .contentType:
            properties.contentType = value
        case .responseTopic:
            if value.isEmpty || value.contains("+") || value.contains("#") {
                throw ValidationError("Invalid response topic '\(value)', does it contain '+' or '#'?")
            }
            properties.responseTopic = value
        case .correlationData:
            guard value.utf8.count <= Int(UInt16.max) else {
                throw ValidationError("Property value too long for property correlation-data.")
            }
            properties.correlationData = Array(value.utf8)
        case .userProperty:
            properties.userProperties.append(MQTTUserProperty(name ?? "", value))
        default:
            throw unsupported("MQTTClient cannot send it")
        }
    }

    /// An unsigned number in `0...max`, with mosquitto's message when out of range.
    private static func number(_ text: String, _ property: Property, max: Int) throws(ValidationError) -> Int {
        guard let number = Int(text) else {
            throw ValidationError("Property value '\(text)' is not a number for property \(property.rawValue).")
        }
        guard (0...max).contains(number) else {
            throw ValidationError("Property value (\(number)) out of range for property \(property.rawValue).")
        }
        return number
    }

    /// Whether any property was given.
    var isEmpty: Bool { self == MQTT5PropertyFlags() }

    /// The `-D will …` properties given, so `--will-topic` can be required for them.
    var hasWillProperties: Bool { !will.isEmpty || willDelayInterval != nil }
}

/// The packet names `-D` accepts (`mosquitto_string_to_command`).
private enum Packet: String {
    case connect, connack, publish, puback, pubrec, pubrel, pubcomp, subscribe, suback, unsubscribe, unsuback
    case disconnect, auth, will
}

/// The property names `-D` accepts (`mosquitto_string_to_property_info`), with the packets each may appear in
/// (MQTT 5.0 section 2.2.2.2; `mosquitto_property_check_command`).
private enum Property: String {
    case payloadFormatIndicator = "payload-format-indicator", messageExpiryInterval = "message-expiry-interval"
    case contentType = "content-type", responseTopic = "response-topic", correlationData = "correlation-data"
    case subscriptionIdentifier = "subscription-identifier", sessionExpiryInterval = "session-expiry-interval"
    case assignedClientIdentifier = "assigned-client-identifier", serverKeepAlive = "server-keep-alive"
    case authenticationMethod = "authentication-method", authenticationData = "authentication-data"
    case requestProblemInformation = "request-problem-information", willDelayInterval = "will-delay-interval"
    case requestResponseInformation = "request-response-information", responseInformation = "response-information"
    case serverReference = "server-reference", reasonString = "reason-string", receiveMaximum = "receive-maximum"
    case topicAliasMaximum = "topic-alias-maximum", topicAlias = "topic-alias", maximumQoS = "maximum-qos"
    case retainAvailable = "retain-available", userProperty = "user-property", maximumPacketSize = "maximum-packet-size"
    case wildcardSubscriptionAvailable = "wildcard-subscription-available"
    case subscriptionIdentifierAvailable = "subscription-identifier-available"
    case sharedSubscriptionAvailable = "shared-subscription-available"

    var packets: Set<Packet> {
        switch self {
        case .payloadFormatIndicator, .messageExpiryInterval, .contentType, .responseTopic, .correlationData:
            [.publish, .will]
        case .subscriptionIdentifier: [.publish, .subscribe]
        case .sessionExpiryInterval: [.connect, .connack, .disconnect]
        case .assignedClientIdentifier, .serverKeepAlive, .responseInformation, .maximumQoS, .retainAvailable,
            .wildcardSubscriptionAvailable, .subscriptionIdentifierAvailable, .sharedSubscriptionAvailable:
            [.connack]
        case .authenticationMethod, .authenticationData: [.connect, .connack, .auth]
        case .requestProblemInformation, .requestResponseInformation: [.connect]
        case .willDelayInterval: [.will]
        case .serverReference: [.connack, .disconnect]
        case .reasonString: [.connack, .puback, .pubrec, .pubrel, .pubcomp, .suback, .unsuback, .disconnect, .auth]
        case .receiveMaximum, .topicAliasMaximum, .maximumPacketSize: [.connect, .connack]
        case .topicAlias: [.publish]
        case .userProperty:
            [.connect, .connack, .publish, .puback, .pubrec, .pubrel, .pubcomp, .subscribe, .suback, .unsubscribe,
             .unsuback, .disconnect, .auth, .will]
        }
    }
}
