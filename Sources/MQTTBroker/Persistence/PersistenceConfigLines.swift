import NIOCore

/// Collects the persistence options of a config file, which may come in any order, and builds the
/// ``PersistenceConfiguration`` once the whole file is read.
///
/// `persistence true|false`, `persistence_location DIR` (required when persistence is true; mosquitto falls back to
/// the working directory, this broker does not guess), `autosave_interval SECONDS` (0 = size-based compaction only,
/// mosquitto's default is 1800) and `persistence_recover_partial true|false` (mqttchat only).
struct PersistenceConfigLines {
    private var enabled = false
    private var enabledLine: (source: String, number: Int)?
    private var location: String?
    private var autosaveSeconds = 1800
    private var recoverPartial = false

    /// Handles `option` when it is a persistence option; returns false for any other option.
    mutating func take(_ option: String, _ line: ConfigLine) throws(BrokerConfigError) -> Bool {
        switch option {
        case "persistence":
            enabled = try line.bool(line.single())
            enabledLine = (line.source, line.number)
        case "persistence_location":
            location = try line.single()
        case "autosave_interval":
            autosaveSeconds = try line.integer(line.single(), in: 0...Int(Int32.max))
        case "persistence_recover_partial":
            recoverPartial = try line.bool(line.single())
        default:
            return false
        }
        return true
    }

    /// The configuration the lines describe; nil when persistence is off.
    func configuration() throws(BrokerConfigError) -> PersistenceConfiguration? {
        guard enabled, let enabledLine else { return nil }
        guard let location, !location.isEmpty else {
            throw .missingValue(source: enabledLine.source, line: enabledLine.number, option: "persistence_location (needed by persistence true)")
        }
        return PersistenceConfiguration(
            directory: location,
            autosaveInterval: autosaveSeconds == 0 ? nil : .seconds(Int64(autosaveSeconds)),
            recoverPartial: recoverPartial)
    }
}
