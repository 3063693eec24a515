import MQTTCore

/// What an MQTT 5 CONNACK tells the client about this broker and its connection (MQTT 5.0 3.2.2.3): the limits it
/// must keep to and the values the broker chose for it. Only what differs from the specification's defaults is
/// sent, as mosquitto does.
enum ConnAckProperties {
    /// The keepalive the connection runs with. An MQTT 5 client asking for more than `max_keepalive`, or for none,
    /// gets `max_keepalive` (sent back as Server Keep Alive, MQTT-3.2.2-21), as from mosquitto; 3.1.1 cannot be told.
    static func keepAlive(requested connect: ConnectPacket, maxKeepalive: UInt16) -> UInt16 {
        guard connect.protocolVersion == .v5, maxKeepalive > 0 else { return connect.keepAliveSeconds }
        if connect.keepAliveSeconds == 0 || connect.keepAliveSeconds > maxKeepalive { return maxKeepalive }
        return connect.keepAliveSeconds
    }

    /// The CONNACK properties for an accepted MQTT 5 `connect`.
    static func make(
        for connect: ConnectPacket, configuration: BrokerConfiguration, assignedClientID: String?,
        keepAliveSeconds: UInt16
    ) -> MQTTProperties {
        var entries: [MQTTProperty] = []
        if let assignedClientID { entries.append(.assignedClientIdentifier(assignedClientID)) }
        if keepAliveSeconds != connect.keepAliveSeconds { entries.append(.serverKeepAlive(keepAliveSeconds)) }
        let receiveMaximum = configuration.maxInflightMessages
        if receiveMaximum > 0, receiveMaximum < Int(UInt16.max) {
            entries.append(.receiveMaximum(UInt16(receiveMaximum)))
        }
        entries.append(.topicAliasMaximum(configuration.maxTopicAlias))
        if configuration.maxQoS < .exactlyOnce { entries.append(.maximumQoS(configuration.maxQoS.rawValue)) }
        if !configuration.retainAvailable { entries.append(.retainAvailable(false)) }
        if configuration.maxPacketSize < MQTTPacketDecoder.protocolMaximumPacketSize {
            entries.append(.maximumPacketSize(UInt32(configuration.maxPacketSize)))
        }
        return MQTTProperties(entries)
    }
}
