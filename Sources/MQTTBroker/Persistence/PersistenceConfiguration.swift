public import NIOCore

/// Durable persistence of retained messages and persistent sessions (`persistence true` in the config file).
///
/// QoS 1/2 messages held for persistent sessions, their subscriptions and in-flight state, inbound QoS 2 packet ids
/// and retained messages are written to an append-only log that is synced before the broker acknowledges what it
/// describes, and compacted into a snapshot. See `Sources/MQTTBroker/Persistence/README.md`.
public struct PersistenceConfiguration: Sendable, Hashable {
    /// The directory holding `mqttchat.snapshot`, `mqttchat.log` and `mqttchat.lock`; created if missing.
    public var directory: String
    /// Also compact when this much time has passed since the last snapshot and the log is not empty
    /// (mosquitto's `autosave_interval`); nil compacts on log size only.
    public var autosaveInterval: TimeAmount?
    /// Compact (write a new snapshot, start a new log) once the log is larger than this many bytes.
    public var compactAfterLogBytes: Int
    /// Start even when a file is damaged in a way a crash cannot explain (a bad record in the middle of the log, a
    /// damaged or unreadable snapshot): keep every record before the damage, move the damaged file aside and log
    /// what was lost. Off by default: the broker refuses to start instead.
    public var recoverPartial: Bool

    /// Creates a persistence configuration for `directory`.
    public init(
        directory: String,
        autosaveInterval: TimeAmount? = nil,
        compactAfterLogBytes: Int = 16 * 1024 * 1024,
        recoverPartial: Bool = false
    ) {
        self.directory = directory
        self.autosaveInterval = autosaveInterval
        self.compactAfterLogBytes = compactAfterLogBytes
        self.recoverPartial = recoverPartial
    }
}
