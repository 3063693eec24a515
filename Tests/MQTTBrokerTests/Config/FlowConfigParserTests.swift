import MQTTBroker
import NIOCore
import Testing

@Suite("Flow-control config keys")
struct FlowConfigParserTests {
    @Test("defaults: no byte limit, 1 MiB pending output, 30 s slow-consumer timeout, 2 s back-pressure stall")
    func defaults() throws {
        let config = try BrokerConfigParser.parse("").configuration
        #expect(config.maxQueuedBytes == 0)
        #expect(config.maxPendingOutputBytes == 1 << 20)
        #expect(config.slowConsumerTimeout == .seconds(30))
        #expect(config.backpressureStallTimeout == .seconds(2))
    }

    @Test("the keys are applied; 0 disables the timeout and the back-pressure")
    func applied() throws {
        let config = try BrokerConfigParser.parse(
            """
            max_queued_bytes 65536
            max_pending_output_bytes 4096
            slow_consumer_timeout 0
            backpressure_stall_ms 0
            """
        ).configuration
        #expect(config.maxQueuedBytes == 65536)
        #expect(config.maxPendingOutputBytes == 4096)
        #expect(config.slowConsumerTimeout == nil)
        #expect(config.backpressureStallTimeout == nil)
        let other = try BrokerConfigParser.parse("slow_consumer_timeout 5\nbackpressure_stall_ms 750").configuration
        #expect(other.slowConsumerTimeout == .seconds(5))
        #expect(other.backpressureStallTimeout == .milliseconds(750))
    }

    @Test("bad values name the file and line")
    func badValues() {
        for (text, option) in [
            ("max_queued_bytes -1", "max_queued_bytes"), ("max_pending_output_bytes lots", "max_pending_output_bytes"),
            ("slow_consumer_timeout 1.5", "slow_consumer_timeout"), ("backpressure_stall_ms", "backpressure_stall_ms"),
        ] {
            #expect(throws: BrokerConfigError.self) { try BrokerConfigParser.parse("# x\n" + text, source: "f.conf") }
            do {
                _ = try BrokerConfigParser.parse("# x\n" + text, source: "f.conf")
            } catch {
                #expect(error.description.hasPrefix("f.conf:2: "))
                #expect(error.description.contains(option))
            }
        }
    }
}
