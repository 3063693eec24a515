import Foundation
import MQTTBroker
import NIOCore
import Testing

@Suite("poll_before_sleep_us config key")
struct PollBeforeSleepConfigParserTests {
    @Test("a busy epoll loop polls for up to 20 µs by default; the key sets it, 0 turns polling off")
    func pollLimit() throws {
        #expect(try BrokerConfigParser.parse("").configuration.pollBeforeSleep == .microseconds(20))
        #expect(try BrokerConfigParser.parse("poll_before_sleep_us 50").configuration.pollBeforeSleep == .microseconds(50))
        #expect(try BrokerConfigParser.parse("poll_before_sleep_us 0").configuration.pollBeforeSleep == .zero)
    }

    @Test("a value that is not a whole number of microseconds from 0 to 1000 is refused with its line")
    func badValues() {
        expectRefused(
            ["poll_before_sleep_us -1", "poll_before_sleep_us 1001", "poll_before_sleep_us 2.5", "poll_before_sleep_us"],
            naming: "poll_before_sleep_us")
    }

    @Test("the shipped config polls for up to 20 µs")
    func shippedConfig() throws {
        #expect(try shippedBrokerSettings().configuration.pollBeforeSleep == .microseconds(20))
    }
}
