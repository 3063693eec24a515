import MQTTCore
import Testing

@testable import MQTTClient

@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    @Test("delays double from 1 s and stay at 64 s")
    func exponentialWithoutJitter() {
        var backoff = ReconnectBackoff(policy: .exponential(jitter: false), seed: 1)
        let delays = (0..<9).compactMap { _ in backoff.next() }
        #expect(delays.map(\.delay) == [1, 2, 4, 8, 16, 32, 64, 64, 64].map { Duration.seconds($0) })
        #expect(delays.map(\.attempt) == Array(1...9))
    }

    @Test("jitter stays within ±20 % of the nominal delay and actually varies")
    func jitterIsBounded() {
        var backoff = ReconnectBackoff(policy: .exponential(), seed: 42)
        let nominal: [Double] = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64]
        var ratios: [Double] = []
        for expected in nominal {
            guard let (_, delay) = backoff.next() else {
                Issue.record("no delay")
                return
            }
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) * 1e-18
            ratios.append(seconds / expected)
        }
        #expect(ratios.allSatisfy { $0 >= 0.8 && $0 <= 1.2 }, "\(ratios)")
        #expect(Set(ratios).count > 1, "jitter must vary")
    }

    @Test("reset starts again at the initial delay; disabled never yields a delay")
    func resetAndDisabled() {
        var backoff = ReconnectBackoff(policy: .exponential(jitter: false), seed: 1)
        _ = backoff.next()
        _ = backoff.next()
        backoff.reset()
        #expect(backoff.next()?.delay == .seconds(1))
        var disabled = ReconnectBackoff(policy: .disabled, seed: 1)
        #expect(disabled.next() == nil)
    }
}
