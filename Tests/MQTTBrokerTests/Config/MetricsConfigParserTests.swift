import MQTTBroker
import Testing

@Suite("metrics_listener config key")
struct MetricsConfigParserTests {
    private func listener(_ text: String) throws -> BrokerConfiguration.MetricsListener? {
        try BrokerConfigParser.parse(text).configuration.metricsListener
    }

    @Test("off by default and in the shipped config")
    func offByDefault() throws {
        #expect(try listener("") == nil)
        #expect(try shippedBrokerSettings().configuration.metricsListener == nil)
    }

    @Test("ADDRESS:PORT, with brackets around an IPv6 address")
    func addressAndPort() throws {
        #expect(try listener("metrics_listener 127.0.0.1:9090") == .init(host: "127.0.0.1", port: 9090))
        #expect(try listener("metrics_listener 0.0.0.0:9100") == .init(host: "0.0.0.0", port: 9100))
        #expect(try listener("metrics_listener [::1]:9090") == .init(host: "::1", port: 9090))
        #expect(try listener("metrics_listener localhost:0") == .init(host: "localhost", port: 0))
        // The MQTT listeners are not affected.
        #expect(try BrokerConfigParser.parse("metrics_listener 127.0.0.1:9090").configuration.listeners == [.init()])
    }

    @Test("any other form is refused with its file and line")
    func otherFormsRefused() {
        expectRefused(
            [
                "metrics_listener", "metrics_listener 9090", "metrics_listener 9090 127.0.0.1", "metrics_listener 127.0.0.1",
                "metrics_listener 127.0.0.1:", "metrics_listener :9090", "metrics_listener 127.0.0.1:65536",
                "metrics_listener 127.0.0.1:-1", "metrics_listener 127.0.0.1:http", "metrics_listener ::1:9090",
                "metrics_listener [::1:9090", "metrics_listener []:9090",
            ],
            naming: "metrics_listener")
    }

    @Test("a second metrics_listener line is refused rather than replacing the first")
    func secondLineRefused() {
        do {
            _ = try BrokerConfigParser.parse("metrics_listener 127.0.0.1:9090\nmetrics_listener 127.0.0.1:9091", source: "m.conf")
            Issue.record("a second metrics_listener line was accepted")
        } catch {
            #expect(error.description.hasPrefix("m.conf:2: "))
            #expect(error.description.contains("metrics_listener"))
        }
    }
}
