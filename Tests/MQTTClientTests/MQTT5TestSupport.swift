import Foundation
import LiveTestSupport
import MQTTClient
import MQTTCore

/// The brokers the MQTT 5 live tests run against.
let mqtt5BrokerKinds: [TestBrokerKind] = [.mosquitto, .mqttchat]

/// An MQTT 5 configuration for `broker` (short keep-alive, fast reconnect).
func v5Configuration(_ broker: RunningBroker, clientID: String) -> MQTTClientConfiguration {
    var configuration = testConfiguration(broker, clientID: clientID)
    configuration.protocolVersion = .v5
    return configuration
}

/// Creates and connects an MQTT 5 client, after `configure` changed its configuration.
func connectedV5Client(
    _ broker: RunningBroker, _ prefix: String = "v5", configure: (inout MQTTClientConfiguration) -> Void = { _ in }
) async throws -> MQTTClient {
    var configuration = v5Configuration(broker, clientID: uniqueID(prefix))
    configure(&configuration)
    let client = try MQTTClient(configuration: configuration)
    try await withTimeout(.seconds(5), "v5 connect") { try await client.connect() }
    return client
}

/// Broker options whose mosquitto configuration reads `aclLines` as its `acl_file` (mosquitto 2.0.11's acl_file
/// denies publishes, with PUBACK 0x87 at MQTT 5, but grants every SUBSCRIBE).
func aclOptions(_ aclLines: [String]) throws -> (BrokerOptions, URL) {
    let directory = try makeTemporaryDirectory(prefix: "mqttchat-acl")
    let file = directory.appendingPathComponent("acl")
    try (aclLines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
    return (BrokerOptions(lines: ["acl_file \(file.path)"]), directory)
}

/// Broker options that load mosquitto's dynamic security plugin with an anonymous group that may not subscribe to
/// `deniedPattern`: the way to make mosquitto 2.0.11 refuse one filter of a SUBSCRIBE (SUBACK 0x87).
func subscribeDenyingOptions(deniedPattern: String) throws -> (BrokerOptions, URL)? {
    let plugin = "/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so"
    guard FileManager.default.fileExists(atPath: plugin) else { return nil }
    let directory = try makeTemporaryDirectory(prefix: "mqttchat-dynsec")
    let file = directory.appendingPathComponent("dynsec.json")
    let json = """
        {"defaultACLAccess": {"publishClientSend": true, "publishClientReceive": true, "subscribe": true,
          "unsubscribe": true},
         "clients": [], "groups": [{"groupname": "anonymous", "roles": [{"rolename": "limited"}], "clients": []}],
         "roles": [{"rolename": "limited", "acls": [{"acltype": "subscribePattern", "topic": "\(deniedPattern)",
           "priority": 0, "allow": false}]}],
         "anonymousGroup": "anonymous"}
        """
    try json.write(to: file, atomically: true, encoding: .utf8)
    // Ours reads mosquitto's acl_file and applies it to SUBSCRIBE too: write-only access to the pattern refuses
    // subscribing to it and still lets clients publish there (the tests' other topics are under allowed/).
    let acl = directory.appendingPathComponent("acl")
    try "topic readwrite allowed/#\ntopic write \(deniedPattern)\n".write(to: acl, atomically: true, encoding: .utf8)
    return (
        BrokerOptions(
            mosquittoLines: ["plugin \(plugin)", "plugin_opt_config_file \(file.path)"],
            mqttchatLines: ["acl_file \(acl.path)"]),
        directory
    )
}

extension MQTTConnectionState {
    var isReconnecting: Bool { if case .reconnecting = self { true } else { false } }
}
