import Testing

@testable import MQTTChat

@Suite("Message deduplication")
struct MessageDeduplicatorTests {
    /// Marks each id as seen in turn and returns whether each was new.
    private func mark(_ ids: [String], in dedup: inout MessageDeduplicator) -> [Bool] {
        ids.map { dedup.markSeen($0) }
    }

    @Test("an id is new once, then a duplicate")
    func duplicates() {
        var dedup = MessageDeduplicator(capacity: 8)
        #expect(mark(["a", "a", "b", "a"], in: &dedup) == [true, false, true, false])
        #expect(dedup.count == 2)
    }

    @Test("memory is bounded and the least recently seen id is forgotten first")
    func lruEviction() {
        var dedup = MessageDeduplicator(capacity: 3)
        #expect(mark(["1", "2", "3"], in: &dedup) == [true, true, true])
        #expect(mark(["1"], in: &dedup) == [false])  // refreshes "1"; "2" is now the oldest
        #expect(mark(["4"], in: &dedup) == [true])  // evicts "2"
        #expect(dedup.count == 3)
        #expect(!dedup.contains("2"))
        #expect(dedup.contains("1") && dedup.contains("3") && dedup.contains("4"))
        #expect(mark(["2"], in: &dedup) == [true])  // forgotten, so new again
    }

    @Test("stays bounded over many ids and keeps recognising recent ones")
    func manyIDs() {
        var dedup = MessageDeduplicator(capacity: 100)
        var firstSightings = 0
        var repeats = 0
        for index in 0..<10_000 {
            if dedup.markSeen("id-\(index)") { firstSightings += 1 }
            if index % 7 == 0, !dedup.markSeen("id-\(index)") { repeats += 1 }
        }
        #expect(firstSightings == 10_000)
        #expect(repeats == 1_429)
        #expect(dedup.count == 100)
        #expect(mark(["id-9999", "id-0"], in: &dedup) == [false, true])
    }
}
