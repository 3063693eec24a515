/// The client-to-broker half of QoS 2 (MQTT 3.1.1 section 4.3.3, "method B"): the broker forwards a QoS 2
/// message on first receipt and remembers its packet identifier until PUBREL, so a re-sent PUBLISH (DUP) with the
/// same identifier is acknowledged again but not forwarded a second time.
struct InboundQoS2Tracker: Sendable, Hashable {
    /// Identifiers answered with PUBREC and not yet released.
    private(set) var pendingIDs: Set<UInt16> = []

    /// A QoS 2 PUBLISH arrived. Returns true when it is new and must be forwarded; false for a duplicate.
    /// Either way the broker answers PUBREC.
    mutating func publishReceived(packetID: UInt16) -> Bool {
        pendingIDs.insert(packetID).inserted
    }

    /// PUBREL arrived: forget the identifier. The broker answers PUBCOMP whether or not it was known
    /// (MQTT-4.3.3-2 allows the client to re-send PUBREL after a reconnect).
    mutating func releaseReceived(packetID: UInt16) {
        pendingIDs.remove(packetID)
    }
}
