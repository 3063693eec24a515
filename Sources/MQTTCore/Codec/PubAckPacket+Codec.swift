import NIOCore

/// Decoded by ``MQTTIdentifierOnlyPacket/decode(identifier:)`` (MQTT 3.1.1 section 3.4), encoded in one store.
extension PubAckPacket: MQTTIdentifierOnlyPacket {
    var packetType: PacketType { .puback }
}
