/// Any MQTT control packet. The broker and codec switch over this enum exhaustively.
public enum MQTTPacket: Sendable, Hashable {
    case connect(ConnectPacket)
    case connack(ConnAckPacket)
    case publish(PublishPacket)
    case puback(PubAckPacket)
    case pubrec(PubRecPacket)
    case pubrel(PubRelPacket)
    case pubcomp(PubCompPacket)
    case subscribe(SubscribePacket)
    case suback(SubAckPacket)
    case unsubscribe(UnsubscribePacket)
    case unsuback(UnsubAckPacket)
    case pingreq(PingReqPacket)
    case pingresp(PingRespPacket)
    case disconnect(DisconnectPacket)

    /// The control packet type of this packet.
    public var type: PacketType {
        switch self {
        case .connect: return .connect
        case .connack: return .connack
        case .publish: return .publish
        case .puback: return .puback
        case .pubrec: return .pubrec
        case .pubrel: return .pubrel
        case .pubcomp: return .pubcomp
        case .subscribe: return .subscribe
        case .suback: return .suback
        case .unsubscribe: return .unsubscribe
        case .unsuback: return .unsuback
        case .pingreq: return .pingreq
        case .pingresp: return .pingresp
        case .disconnect: return .disconnect
        }
    }
}
