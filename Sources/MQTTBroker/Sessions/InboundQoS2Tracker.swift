/// The client-to-broker half of QoS 2 (MQTT 3.1.1 section 4.3.3, "method B"): the broker forwards a QoS 2
/// message on first receipt and remembers its packet identifier until PUBREL, so a re-sent PUBLISH (DUP) with the
/// same identifier is acknowledged again but not forwarded a second time.
///
/// A client rarely has more than a few dozen of these open (mosquitto's default window is 20), so up to
/// ``inlineLimit`` identifiers are kept in a small array searched linearly: no hashing on a path every QoS 2 PUBLISH
/// and PUBREL takes. Past that they move to a `Set`, whose per-process seeded hash keeps a client that opens many from
/// making the broker's work quadratic. The client chooses these identifiers, so they are not hashed cheaply the way
/// the broker's own are (``PacketIDTable``).
struct InboundQoS2Tracker: Sendable {
    /// How many identifiers the linear array holds before they move to the set.
    static let inlineLimit = 32

    /// The identifiers while there are at most ``inlineLimit``, in no order; empty while ``spilled`` is in use.
    private var few: [UInt16] = []
    /// All the identifiers once there were more than ``inlineLimit``; empty otherwise. When it empties the tracker
    /// goes back to ``few``.
    private var spilled: Set<UInt16> = []

    /// Identifiers answered with PUBREC and not yet released.
    var pendingIDs: Set<UInt16> {
        spilled.isEmpty ? Set(few) : spilled
    }

    /// How many identifiers are pending.
    var count: Int { spilled.isEmpty ? few.count : spilled.count }

    /// A QoS 2 PUBLISH arrived. Returns true when it is new and must be forwarded; false for a duplicate.
    /// Either way the broker answers PUBREC.
    mutating func publishReceived(packetID: UInt16) -> Bool {
        if !spilled.isEmpty {
            return spilled.insert(packetID).inserted
        }
        if few.contains(packetID) { return false }
        if few.count < Self.inlineLimit {
            few.append(packetID)
        } else {
            spilled = Set(few)
            spilled.insert(packetID)
            few = []
        }
        return true
    }

    /// PUBREL arrived: forget the identifier. Returns whether it was pending. The broker answers PUBCOMP whether or
    /// not it was (MQTT-4.3.3-2 allows the client to re-send PUBREL after a reconnect).
    @discardableResult
    mutating func releaseReceived(packetID: UInt16) -> Bool {
        if !spilled.isEmpty {
            return spilled.remove(packetID) != nil
        }
        guard let index = few.firstIndex(of: packetID) else { return false }
        // Order does not matter: the last identifier fills the gap.
        few.swapAt(index, few.count - 1)
        few.removeLast()
        return true
    }
}

extension InboundQoS2Tracker: Hashable {
    /// Two trackers are equal when they hold the same identifiers, however they store them.
    static func == (lhs: InboundQoS2Tracker, rhs: InboundQoS2Tracker) -> Bool {
        lhs.count == rhs.count && lhs.pendingIDs == rhs.pendingIDs
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(pendingIDs)
    }
}
