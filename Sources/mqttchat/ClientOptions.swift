import ArgumentParser
import Foundation
import MQTTClient

/// Connection options shared by `publish`, `subscribe` and `chat`, spelled like mosquitto_pub / mosquitto_sub.
///
/// `-h` is the host, as in mosquitto's tools, so these commands use `--help` only.
struct ClientOptions: ParsableArguments {
    @Option(name: [.customShort("h"), .long], help: "Broker host.")
    var host = "127.0.0.1"

    @Option(name: [.customShort("p"), .customLong("port")], help: "Broker port (default 1883, 8883 with TLS).")
    var explicitPort: Int?

    /// The port to connect to without TLS.
    var port: Int { port(tls: false) }

    /// `-p`, or mosquitto's default for plain MQTT (1883) or MQTT over TLS (8883).
    func port(tls: Bool) -> Int { explicitPort ?? (tls ? 8883 : 1883) }

    @Option(name: [.customShort("u"), .long], help: "User name for broker authentication.")
    var username: String?

    @Option(name: [.customShort("P"), .customLong("pw")], help: "Password for broker authentication.")
    var password: String?

    @Option(name: [.customShort("i"), .customLong("id")], help: "MQTT client id.")
    var clientID: String?

    @Option(name: [.customShort("k"), .long], help: "Keep-alive interval in seconds.")
    var keepalive = 60

    @Option(name: .customLong("connect-timeout"), help: "Seconds to wait for the broker to accept the connection.")
    var connectTimeout: Double = 10

    func validate() throws {
        if let explicitPort, !(1...65535).contains(explicitPort) { throw ValidationError("-p must be a port between 1 and 65535") }
        guard (5...65535).contains(keepalive) else { throw ValidationError("-k must be between 5 and 65535 seconds") }
        guard connectTimeout > 0 else { throw ValidationError("--connect-timeout must be positive") }
        if password != nil, username == nil { throw ValidationError("-P needs -u") }
        if let clientID, clientID.isEmpty || clientID.utf8.count > 65535 {
            throw ValidationError("-i must be 1 to 65535 bytes")
        }
    }

    /// The client id given with `-i`, or `<prefix>-<pid>-<random>` (like mosquitto's `mosq-...` ids) so that two
    /// runs never take over each other's session.
    func clientID(defaultPrefix prefix: String) -> String {
        clientID ?? "\(prefix)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The MQTT client configuration these options describe.
    func configuration(clientID: String, reconnect: ReconnectPolicy, tls: Bool = false) -> MQTTClientConfiguration {
        var configuration = MQTTClientConfiguration(clientID: clientID, host: host, port: port(tls: tls))
        configuration.username = username
        configuration.password = password
        configuration.keepAlive = .seconds(keepalive)
        configuration.reconnect = reconnect
        return configuration
    }

    /// `host:port`, for messages.
    var address: String { address(tls: false) }

    /// `host:port` with the port a TLS connection would use when `tls` is set, for messages.
    func address(tls: Bool) -> String { "\(host):\(port(tls: tls))" }
}
