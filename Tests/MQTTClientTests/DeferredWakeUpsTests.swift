import MQTTCore
import Testing

@testable import MQTTClient

/// When the network thread hands what its callbacks produced to waiting tasks: instants are made up, nothing sleeps.
@Suite("Client: deferred wake-ups")
struct DeferredWakeUpsTests {
    typealias Batch = DeferredWakeUps<Int>
    let start = ContinuousClock.now

    func waiters(_ entries: [Batch.Entry]) -> [Int] {
        entries.compactMap { if case .resume(let waiter, _) = $0 { waiter } else { nil } }
    }

    @Test("a batch waits while the thread is busy and is taken whole, in order, when the thread goes idle")
    func idleTakesAll() {
        var batch = Batch(batchLimit: 4, delayLimit: .milliseconds(1))
        let (_, continuation) = AsyncStream<MQTTMessage>.makeStream()
        batch.append(.resume(1, .done), now: start)
        batch.append(.deliver(continuation, MQTTMessage(topic: "t", payload: [7])), now: start + .microseconds(5))
        batch.append(.resume(2, .failed(.notConnected)), now: start + .microseconds(10))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(20)).isEmpty)
        let taken = batch.takeIfDue(idle: true, now: start + .microseconds(30))
        #expect(taken.count == 3)
        #expect(waiters(taken) == [1, 2])
        if case .deliver(_, let message) = taken[1] {
            #expect(message.topic == "t" && message.payload == [7])
        } else {
            Issue.record("the message is not second: \(taken)")
        }
        if case .resume(_, let completion) = taken[2] { #expect(completion == .failed(.notConnected)) }
        #expect(batch.isEmpty)
        #expect(batch.takeIfDue(idle: true, now: start).isEmpty)
    }

    @Test("a busy thread still hands over a batch that reached the size limit")
    func sizeLimit() {
        var batch = Batch(batchLimit: 3, delayLimit: .seconds(1))
        for waiter in 1...2 { batch.append(.resume(waiter, .done), now: start) }
        #expect(batch.takeIfDue(idle: false, now: start).isEmpty)
        batch.append(.resume(3, .done), now: start)
        #expect(waiters(batch.takeIfDue(idle: false, now: start)) == [1, 2, 3])
    }

    @Test("a busy thread still hands over a batch whose oldest entry waited the delay limit, counted from the first")
    func delayLimit() {
        var batch = Batch(batchLimit: 100, delayLimit: .milliseconds(1))
        batch.append(.resume(1, .done), now: start)
        batch.append(.resume(2, .done), now: start + .microseconds(900))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(999)).isEmpty)
        #expect(waiters(batch.takeIfDue(idle: false, now: start + .milliseconds(1))) == [1, 2])
        // The next batch's age starts with its own first entry.
        batch.append(.resume(3, .done), now: start + .milliseconds(5))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(5500)).isEmpty)
        #expect(waiters(batch.takeIfDue(idle: false, now: start + .milliseconds(6))) == [3])
    }
}
