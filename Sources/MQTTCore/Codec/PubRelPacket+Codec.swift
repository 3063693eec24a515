import NIOCore

/// Decoded by ``MQTTIdentifierOnlyPacket/decode(identifier:)`` (MQTT 3.1.1 section 3.6), encoded in one store.
extension PubRelPacket: MQTTIdentifierOnlyPacket {
    var packetType: PacketType { .pubrel }
}
