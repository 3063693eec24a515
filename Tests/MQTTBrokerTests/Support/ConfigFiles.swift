import Foundation
import MQTTBroker
import Testing

/// A file shipped in the repository's `broker-config/`.
func shippedConfigPath(_ name: String) -> String {
    // This file is Tests/MQTTBrokerTests/Support/ConfigFiles.swift: the root is four levels up.
    var root = URL(fileURLWithPath: #filePath)
    for _ in 0..<4 { root = root.deletingLastPathComponent() }
    return root.appendingPathComponent("broker-config").appendingPathComponent(name).path
}

/// The shipped `broker-config/mqttchat.conf`, parsed.
func shippedBrokerSettings() throws -> BrokerSettings {
    try BrokerConfigParser.load(path: shippedConfigPath("mqttchat.conf"))
}

/// Expects each of `lines`, as line 2 of a file `p.conf`, to be refused with an error that names the line and `key`.
func expectRefused(_ lines: [String], naming key: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for text in lines {
        do {
            _ = try BrokerConfigParser.parse("# x\n" + text, source: "p.conf")
            Issue.record("accepted: \(text)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.description.hasPrefix("p.conf:2: "), sourceLocation: sourceLocation)
            #expect(error.description.contains(key), sourceLocation: sourceLocation)
        }
    }
}
