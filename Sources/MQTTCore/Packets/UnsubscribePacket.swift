/// UNSUBSCRIBE: a client removes topic filters (MQTT 3.1.1 section 3.10).
public struct UnsubscribePacket: Sendable, Hashable {
    /// Packet identifier, echoed by UNSUBACK; never 0.
    public var packetID: UInt16
    /// The filters to remove; never empty.
    public var topicFilters: [String]
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// Creates an UNSUBSCRIBE packet.
    public init(packetID: UInt16, topicFilters: [String], properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.topicFilters = topicFilters
        self.properties = properties
    }
}
