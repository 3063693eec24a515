/// A map from the packet identifiers the broker hands out to a session (its outbound window) to their entries:
/// an open-addressing table with linear probing, whose slot for an identifier is Fibonacci hashing of it (the
/// identifier times 2³²/φ, top bits).
///
/// `Dictionary<UInt16, …>` hashes every key with a seeded SipHash, and at QoS 2 every message is looked up three
/// times (sent, PUBREC, PUBCOMP), so that hash is paid three times per message. The broker allocates these
/// identifiers in sequence, skipping those in flight, so the identifiers in flight at once are nearly consecutive,
/// and Fibonacci hashing spreads consecutive keys evenly over the slots: runs of occupied slots stay short, which
/// keeps removal (shifting back the entries that probed past the removed one) short too. The identifier itself as
/// the slot would put a window of 20 in one run of 20, which every removal of its oldest entry would walk. Not
/// for identifiers a client chooses: without a seeded hash a client could pick identifiers that all collide,
/// which is why the inbound QoS 2 tracker keeps a `Set`.
///
/// Like `Dictionary`, the table keeps its storage when entries are removed, so a window that fills and empties
/// allocates once.
struct PacketIDTable<Value> {
    /// Each slot's identifier, or ``emptySlot``. A power of two in size, or empty before the first insertion.
    private var keys: [Int32] = []
    /// Each slot's entry, nil exactly where ``keys`` holds ``emptySlot``.
    private var values: [Value?] = []
    /// The number of entries.
    private(set) var count = 0

    /// The key of a slot with no entry (identifiers are 0...65535).
    private static var emptySlot: Int32 { -1 }
    /// The smallest storage allocated, in slots.
    private static var minimumCapacity: Int { 16 }

    /// The slot where `packetID`'s probe starts in a table of `capacity` slots (a power of two).
    private static func home(of packetID: Int32, capacity: Int) -> Int {
        let product = UInt32(truncatingIfNeeded: packetID) &* 0x9E37_79B9
        return Int(product >> UInt32(32 - capacity.trailingZeroBitCount))
    }

    /// Whether the table has no entries.
    var isEmpty: Bool { count == 0 }

    /// The entry for `packetID`, if any. Setting nil removes it.
    subscript(packetID: UInt16) -> Value? {
        get {
            guard let slot = slot(of: packetID) else { return nil }
            return values[slot]
        }
        set {
            if let newValue {
                insert(newValue, for: packetID)
            } else {
                _ = removeValue(forKey: packetID)
            }
        }
    }

    /// Whether `packetID` has an entry.
    func contains(_ packetID: UInt16) -> Bool {
        slot(of: packetID) != nil
    }

    /// Changes the entry for `packetID` in place (no copy of it out and back) and returns whether there was one.
    @discardableResult
    mutating func modifyValue(forKey packetID: UInt16, _ modify: (inout Value) -> Void) -> Bool {
        guard let slot = slot(of: packetID), values[slot] != nil else { return false }
        values[slot].modifyWrapped(modify)
        return true
    }

    /// Removes and returns the entry for `packetID`, moving it out rather than copying it.
    @discardableResult
    mutating func removeValue(forKey packetID: UInt16) -> Value? {
        guard let slot = slot(of: packetID) else { return nil }
        var removed: Value? = nil
        swap(&removed, &values[slot])
        closeGap(at: slot)
        count -= 1
        return removed
    }

    /// The entries, in no particular order (callers that need the send order sort them).
    var entries: [(packetID: UInt16, value: Value)] {
        var result: [(packetID: UInt16, value: Value)] = []
        result.reserveCapacity(count)
        for slot in keys.indices where keys[slot] != Self.emptySlot {
            if let value = values[slot] { result.append((UInt16(truncatingIfNeeded: keys[slot]), value)) }
        }
        return result
    }

    // MARK: Slots

    /// The slot holding `packetID`, or nil.
    private func slot(of packetID: UInt16) -> Int? {
        guard !keys.isEmpty else { return nil }
        let mask = keys.count - 1
        let key = Int32(packetID)
        var slot = Self.home(of: key, capacity: keys.count)
        while true {
            let found = keys[slot]
            if found == key { return slot }
            if found == Self.emptySlot { return nil }
            slot = (slot + 1) & mask
        }
    }

    /// Stores `value` for `packetID`, replacing an entry it had.
    private mutating func insert(_ value: Value, for packetID: UInt16) {
        if let slot = slot(of: packetID) {
            values[slot] = value
            return
        }
        // At most three quarters full, so a probe always meets an empty slot.
        if (count + 1) * 4 > keys.count * 3 { grow() }
        let mask = keys.count - 1
        var slot = Self.home(of: Int32(packetID), capacity: keys.count)
        while keys[slot] != Self.emptySlot { slot = (slot + 1) & mask }
        keys[slot] = Int32(packetID)
        values[slot] = value
        count += 1
    }

    /// Doubles the storage (or allocates the first) and re-inserts every entry, moving it.
    private mutating func grow() {
        let capacity = max(Self.minimumCapacity, keys.count * 2)
        var oldKeys = [Int32](repeating: Self.emptySlot, count: capacity)
        var oldValues = [Value?](repeating: nil, count: capacity)
        swap(&oldKeys, &keys)
        swap(&oldValues, &values)
        let mask = capacity - 1
        for index in oldKeys.indices where oldKeys[index] != Self.emptySlot {
            var slot = Self.home(of: oldKeys[index], capacity: capacity)
            while keys[slot] != Self.emptySlot { slot = (slot + 1) & mask }
            keys[slot] = oldKeys[index]
            swap(&values[slot], &oldValues[index])
        }
    }

    /// Empties `slot`, whose entry was taken, and shifts back the entries after it that probed past it, so that
    /// every entry stays reachable from its home slot without tombstones.
    private mutating func closeGap(at slot: Int) {
        let mask = keys.count - 1
        var gap = slot
        var next = (slot + 1) & mask
        while keys[next] != Self.emptySlot {
            let home = Self.home(of: keys[next], capacity: keys.count)
            // The entry at `next` may fill the gap when its home is not cyclically within (gap, next].
            let distanceToNext = (next - home) & mask
            let distanceToGap = (gap - home) & mask
            if distanceToGap < distanceToNext {
                keys[gap] = keys[next]
                values.swapAt(gap, next)
                gap = next
            }
            next = (next + 1) & mask
        }
        keys[gap] = Self.emptySlot
        values[gap] = nil
    }
}

extension PacketIDTable: Sendable where Value: Sendable {}

extension Optional {
    /// Applies `modify` to the wrapped value in place; does nothing to nil.
    fileprivate mutating func modifyWrapped(_ modify: (inout Wrapped) -> Void) {
        guard self != nil else { return }
        // Unwrapped in place after the check: binding the value (`if case .some(var value)`) would copy it and
        // retain its references, on every acknowledgement that changes an entry.
        modify(&self!)
    }
}
