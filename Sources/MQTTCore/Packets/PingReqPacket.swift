/// PINGREQ: a client's keepalive probe (MQTT 3.1.1 section 3.12). No variable header, no payload.
public struct PingReqPacket: Sendable, Hashable {
    /// Creates a PINGREQ packet.
    public init() {}
}
