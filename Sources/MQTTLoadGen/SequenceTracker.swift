/// Which sequence numbers of one publisher one subscriber has received: a growable bit set plus counters.
public struct SequenceTracker: Sendable, Hashable {
    /// One bit per sequence number.
    private var words: [UInt64] = []
    /// Distinct sequence numbers received.
    public private(set) var unique = 0
    /// Receptions of a sequence number that had already been received.
    public private(set) var duplicates = 0
    /// First receptions of a sequence number lower than one received before (MQTT orders messages per topic).
    public private(set) var outOfOrder = 0
    /// The highest sequence number received so far, or -1.
    public private(set) var highest = -1

    /// Creates an empty tracker.
    public init() {}

    /// Records one reception; returns false if it is a duplicate.
    @discardableResult
    public mutating func record(_ sequence: Int) -> Bool {
        let word = sequence >> 6
        let bit = UInt64(1) << UInt64(sequence & 63)
        if word >= words.count {
            words.append(contentsOf: repeatElement(0, count: max(word + 1 - words.count, words.count)))
        }
        if words[word] & bit != 0 {
            duplicates += 1
            return false
        }
        words[word] |= bit
        unique += 1
        if sequence < highest { outOfOrder += 1 } else { highest = sequence }
        return true
    }

    /// How many of the sequence numbers `0..<expected` were never received.
    public func missing(expected: Int) -> Int {
        guard expected > 0 else { return 0 }
        var received = 0
        let fullWords = expected >> 6
        for index in 0..<min(fullWords, words.count) { received += words[index].nonzeroBitCount }
        let tailBits = expected & 63
        if tailBits > 0, fullWords < words.count {
            received += (words[fullWords] & ((UInt64(1) << UInt64(tailBits)) - 1)).nonzeroBitCount
        }
        return expected - received
    }
}

/// Delivery accounting of one subscriber: a ``SequenceTracker`` per publisher.
public struct DeliveryAccounting: Sendable, Hashable {
    /// Trackers indexed by publisher.
    public private(set) var trackers: [SequenceTracker]
    /// Every PUBLISH received, duplicates included.
    public private(set) var delivered = 0
    /// Distinct messages received over all publishers.
    public private(set) var unique = 0
    /// Messages whose stamp names a publisher index outside the run (or that carry no stamp).
    public private(set) var foreign = 0

    /// Creates accounting for `publisherCount` publishers.
    public init(publisherCount: Int) {
        trackers = Array(repeating: SequenceTracker(), count: max(0, publisherCount))
    }

    /// Records a delivery of `sequence` from `publisher`.
    public mutating func record(publisher: Int, sequence: Int) {
        delivered += 1
        guard trackers.indices.contains(publisher), sequence >= 0 else {
            foreign += 1
            return
        }
        if trackers[publisher].record(sequence) { unique += 1 }
    }

    /// Records a delivery without a readable stamp.
    public mutating func recordForeign() {
        delivered += 1
        foreign += 1
    }

    /// Duplicate receptions over all publishers.
    public var duplicates: Int { trackers.reduce(0) { $0 + $1.duplicates } }
    /// Out-of-order first receptions over all publishers.
    public var outOfOrder: Int { trackers.reduce(0) { $0 + $1.outOfOrder } }

    /// Messages never received, given how many each publisher sent to this subscriber (0 for publishers whose
    /// messages this subscriber does not receive).
    public func lost(expected: [Int]) -> Int {
        var lost = 0
        for (publisher, count) in expected.enumerated() where count > 0 {
            if trackers.indices.contains(publisher) {
                lost += trackers[publisher].missing(expected: count)
            } else {
                lost += count
            }
        }
        return lost
    }
}
