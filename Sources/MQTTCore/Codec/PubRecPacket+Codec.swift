import NIOCore

/// Decoded by ``MQTTIdentifierOnlyPacket/decode(identifier:)`` (MQTT 3.1.1 section 3.5), encoded in one store.
extension PubRecPacket: MQTTIdentifierOnlyPacket {
    var packetType: PacketType { .pubrec }
}
