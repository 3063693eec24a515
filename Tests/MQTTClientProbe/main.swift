// A tiny MQTTClient user for tests: connects with a will, prints "connected", then sleeps until killed.
// Usage: MQTTClientProbe <port> <clientID> <willTopic> <willPayload>
import Foundation
import MQTTClient
import MQTTCore

let arguments = CommandLine.arguments
guard arguments.count == 5, let port = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: MQTTClientProbe <port> <clientID> <willTopic> <willPayload>\n".utf8))
    exit(2)
}
var configuration = MQTTClientConfiguration(clientID: arguments[2], port: port)
configuration.keepAlive = .seconds(5)
configuration.will = MQTTWill(topic: arguments[3], payload: Array(arguments[4].utf8), qos: .atLeastOnce)
do {
    let client = try MQTTClient(configuration: configuration)
    try await client.connect()
    FileHandle.standardOutput.write(Data("connected\n".utf8))
    try await Task.sleep(for: .seconds(60))
    withExtendedLifetime(client) {}
} catch {
    FileHandle.standardError.write(Data("probe failed: \(error)\n".utf8))
    exit(1)
}
