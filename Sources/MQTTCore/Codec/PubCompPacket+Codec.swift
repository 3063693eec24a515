import NIOCore

/// Decoded by ``MQTTIdentifierOnlyPacket/decode(identifier:)`` (MQTT 3.1.1 section 3.7), encoded in one store.
extension PubCompPacket: MQTTIdentifierOnlyPacket {
    var packetType: PacketType { .pubcomp }
}
