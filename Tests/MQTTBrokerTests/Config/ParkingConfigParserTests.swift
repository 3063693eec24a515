import Foundation
import MQTTBroker
import NIOCore
import Testing

@Suite("Parking config key")
struct ParkingConfigParserTests {
    @Test("idle connections park after 500 ms by default; the key sets it, 0 turns parking off")
    func parkingDelay() throws {
        #expect(try BrokerConfigParser.parse("").configuration.parkIdleConnectionsAfter == .milliseconds(500))
        let set = try BrokerConfigParser.parse("park_idle_connections_after_ms 2500").configuration
        #expect(set.parkIdleConnectionsAfter == .milliseconds(2500))
        #expect(try BrokerConfigParser.parse("park_idle_connections_after_ms 0").configuration.parkIdleConnectionsAfter == nil)
    }

    @Test("a value that is not a whole number of milliseconds is refused with its line")
    func badValues() {
        expectRefused(
            ["park_idle_connections_after_ms -1", "park_idle_connections_after_ms 0.5", "park_idle_connections_after_ms"],
            naming: "park_idle_connections_after_ms")
    }

    @Test("the shipped config parks after 500 ms")
    func shippedConfig() throws {
        #expect(try shippedBrokerSettings().configuration.parkIdleConnectionsAfter == .milliseconds(500))
    }
}
