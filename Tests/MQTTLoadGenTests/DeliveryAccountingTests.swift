import MQTTLoadGen
import Testing

@Suite("Delivery accounting")
struct DeliveryAccountingTests {
    @Test("a duplicated and a missing sequence number are each counted once")
    func duplicateAndMissing() {
        var accounting = DeliveryAccounting(publisherCount: 2)
        for sequence in [0, 1, 1, 3] { accounting.record(publisher: 0, sequence: sequence) }
        for sequence in 0..<5 { accounting.record(publisher: 1, sequence: sequence) }
        #expect(accounting.delivered == 9)
        #expect(accounting.unique == 8)
        #expect(accounting.duplicates == 1)
        #expect(accounting.lost(expected: [4, 5]) == 1)
        #expect(accounting.outOfOrder == 0)
    }

    @Test("messages of a publisher that was never heard from are all lost; unknown publishers are foreign")
    func silentAndUnknownPublishers() {
        var accounting = DeliveryAccounting(publisherCount: 2)
        accounting.record(publisher: 0, sequence: 0)
        accounting.record(publisher: 7, sequence: 0)
        #expect(accounting.lost(expected: [1, 3]) == 3)
        #expect(accounting.foreign == 1)
        #expect(accounting.delivered == 2)
    }

    @Test("a late first delivery is out of order, not a duplicate; missing counts span word boundaries")
    func reorderingAndLargeSequences() {
        var tracker = SequenceTracker()
        for sequence in 0..<130 where sequence != 64 && sequence != 129 { tracker.record(sequence) }
        #expect(tracker.missing(expected: 130) == 2)
        #expect(tracker.missing(expected: 64) == 0)
        let lateFirst = tracker.record(64)
        #expect(lateFirst)
        #expect(tracker.outOfOrder == 1)
        let repeated = tracker.record(64)
        #expect(!repeated)
        #expect(tracker.duplicates == 1)
        #expect(tracker.missing(expected: 200) == 71)
    }

    @Test("latency percentiles are ordered and use nearest rank")
    func latencyPercentiles() throws {
        let summary = try #require(LatencySummary(nanoseconds: (1...100).map { UInt64($0) * 1_000 }.shuffled()))
        #expect(summary.count == 100)
        #expect(summary.p50Micros == 50)
        #expect(summary.p99Micros == 99)
        #expect(summary.maxMicros == 100)
        #expect(summary.p90Micros == 90)
        #expect(summary.p999Micros == 100)
        let large = try #require(LatencySummary(nanoseconds: (1...2_000).map { UInt64($0) * 1_000 }))
        #expect(large.p999Micros == 1_998)
        #expect(LatencySummary(nanoseconds: []) == nil)
    }
}
