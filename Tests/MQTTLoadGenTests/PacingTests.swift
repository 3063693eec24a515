@testable import MQTTLoadGen
import Testing

@Suite("Fixed-rate pacing")
struct PacingTests {
    /// The instants at which the first `count` messages of every publisher are due, merged and sorted.
    private func mergedSchedule(_ config: LoadGenConfig, messagesPerPublisher count: Int) throws -> [UInt64] {
        let rate = try #require(config.rate) / Double(config.publishers)
        var instants: [UInt64] = []
        for publisher in 0..<config.publishers {
            let first = 1_000_000_000 + config.phaseNanos(ofPublisher: publisher)
            for sent in 0..<count {
                instants.append(PublisherHandler.nextDueNanos(after: sent, since: first, rate: rate))
            }
        }
        return instants.sorted()
    }

    @Test("interleaved publishers make one stream whose messages are 1/rate apart")
    func interleavedIsEvenlySpaced() throws {
        var config = LoadGenConfig(scenario: .pairs, qos: .atLeastOnce)
        config.publishers = 10
        config.rate = 5_000
        let schedule = try mergedSchedule(config, messagesPerPublisher: 20)
        let gaps = zip(schedule.dropFirst(), schedule).map { Int64($0) - Int64($1) }
        #expect(gaps.count == 199)
        #expect(gaps.allSatisfy { abs($0 - 200_000) <= 1 }, "gaps: \(Set(gaps).sorted())")
    }

    @Test("aligned publishers send a burst of one message each, every publishers/rate seconds")
    func alignedSendsBursts() throws {
        var config = LoadGenConfig(scenario: .pairs, qos: .atLeastOnce)
        config.publishers = 10
        config.rate = 5_000
        config.pacing = .aligned
        let schedule = try mergedSchedule(config, messagesPerPublisher: 3)
        #expect(Set(schedule).count == 3)
        #expect(Set(schedule[0..<10]).count == 1)
        #expect(schedule[10] - schedule[0] == 2_000_000)
        #expect((0..<10).allSatisfy { config.phaseNanos(ofPublisher: $0) == 0 })
    }

    @Test("a message counts as due exactly from the instant nextDueNanos gives for it")
    func dueCountMatchesNextDue() {
        let first: UInt64 = 5_000_000
        for rate in [1.0, 333.0, 500.0, 123_456.0] {
            for sent in [0, 1, 2, 7, 1_000] {
                let due = PublisherHandler.nextDueNanos(after: sent, since: first, rate: rate)
                #expect(PublisherHandler.messagesDue(at: due, since: first, rate: rate) == sent + 1)
                #expect(PublisherHandler.messagesDue(at: due - 1, since: first, rate: rate) == sent)
            }
        }
        #expect(PublisherHandler.messagesDue(at: first - 1, since: first, rate: 10) == 0)
    }

    @Test("an unpaced run has no phases")
    func unpacedHasNoPhase() {
        var config = LoadGenConfig(scenario: .pairs, qos: .atMostOnce)
        config.publishers = 4
        #expect((0..<4).allSatisfy { config.phaseNanos(ofPublisher: $0) == 0 })
    }
}
