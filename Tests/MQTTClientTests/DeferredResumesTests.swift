import Testing

@testable import MQTTClient

/// When the network thread resumes the callers its callbacks completed: instants are made up, nothing sleeps.
@Suite("Client: deferred resumes")
struct DeferredResumesTests {
    let start = ContinuousClock.now

    @Test("a batch waits while the thread is busy and is taken whole when the thread goes idle")
    func idleTakesAll() {
        var batch = DeferredResumes<Int>(batchLimit: 4, delayLimit: .milliseconds(1))
        batch.append(1, .done, now: start)
        batch.append(2, .failed(.notConnected), now: start + .microseconds(10))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(20)).isEmpty)
        let taken = batch.takeIfDue(idle: true, now: start + .microseconds(30))
        #expect(taken.map(\.0) == [1, 2])
        #expect(taken.map(\.1) == [.done, .failed(.notConnected)])
        #expect(batch.isEmpty)
        #expect(batch.takeIfDue(idle: true, now: start).isEmpty)
    }

    @Test("a busy thread still resumes a batch that reached the size limit")
    func sizeLimit() {
        var batch = DeferredResumes<Int>(batchLimit: 3, delayLimit: .seconds(1))
        for waiter in 1...2 { batch.append(waiter, .done, now: start) }
        #expect(batch.takeIfDue(idle: false, now: start).isEmpty)
        batch.append(3, .done, now: start)
        #expect(batch.takeIfDue(idle: false, now: start).map(\.0) == [1, 2, 3])
    }

    @Test("a busy thread still resumes a batch whose oldest entry waited the delay limit, counted from the first")
    func delayLimit() {
        var batch = DeferredResumes<Int>(batchLimit: 100, delayLimit: .milliseconds(1))
        batch.append(1, .done, now: start)
        batch.append(2, .done, now: start + .microseconds(900))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(999)).isEmpty)
        #expect(batch.takeIfDue(idle: false, now: start + .milliseconds(1)).map(\.0) == [1, 2])
        // The next batch's age starts with its own first entry.
        batch.append(3, .done, now: start + .milliseconds(5))
        #expect(batch.takeIfDue(idle: false, now: start + .microseconds(5500)).isEmpty)
        #expect(batch.takeIfDue(idle: false, now: start + .milliseconds(6)).map(\.0) == [3])
    }
}
