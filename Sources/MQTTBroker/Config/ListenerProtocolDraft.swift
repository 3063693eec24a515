import Foundation

/// The `protocol` and `http_dir` options of one `listener` block, collected line by line and checked once the whole
/// file is read, since mosquitto lets a listener's options come in any order (`http_dir` may precede `protocol
/// websockets`). Errors name the line of the option at fault.
struct ListenerProtocolDraft {
    /// The options collected here.
    static let options: Set<String> = ["protocol", "http_dir"]

    private var transportProtocol: (value: BrokerConfiguration.ListenerProtocol, line: ConfigLine)?
    private var httpDirectory: (value: String, line: ConfigLine)?

    /// Records one option line; a repeated option replaces the earlier one, as in mosquitto.
    mutating func record(_ option: String, _ line: ConfigLine) throws(BrokerConfigError) {
        switch option {
        case "protocol":
            let value = try line.single()
            guard let parsed = BrokerConfiguration.ListenerProtocol(rawValue: value) else {
                throw line.invalid(value, expected: "mqtt or websockets")
            }
            transportProtocol = (parsed, line)
        case "http_dir":
            httpDirectory = (try line.single(), line)
        default:
            throw .unknownOption(source: line.source, line: line.number, option: option)
        }
    }

    /// Applies the options to `listener`. `http_dir` needs `protocol websockets` in the same listener and an existing
    /// directory. A relative directory is relative to the broker's working directory, as `password_file`,
    /// `acl_file` and `persistence_location` are (and as in mosquitto); it is resolved to its real path when the
    /// listener starts.
    func apply(to listener: inout BrokerConfiguration.Listener) throws(BrokerConfigError) {
        listener.transportProtocol = transportProtocol?.value ?? .mqtt
        guard let httpDirectory else { return }
        let line = httpDirectory.line
        guard listener.transportProtocol == .websockets else {
            throw .invalidListenerSettings(
                source: line.source, line: line.number, option: "http_dir",
                reason: "needs protocol websockets in the same listener")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: httpDirectory.value, isDirectory: &isDirectory),
            isDirectory.boolValue
        else {
            throw .invalidFile(
                source: line.source, line: line.number, option: "http_dir",
                reason: "\(httpDirectory.value): no such directory")
        }
        listener.httpDirectory = httpDirectory.value
    }
}
