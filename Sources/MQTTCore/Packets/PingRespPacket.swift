/// PINGRESP: the server's answer to PINGREQ (MQTT 3.1.1 section 3.13). No variable header, no payload.
public struct PingRespPacket: Sendable, Hashable {
    /// Creates a PINGRESP packet.
    public init() {}
}
