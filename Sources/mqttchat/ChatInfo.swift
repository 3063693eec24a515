import MQTTChat
import MQTTClient

/// What `/info` in `mqttchat chat` prints: who, where, and which MQTT version the session speaks.
enum ChatInfo {
    /// `* alice in #lobby on 127.0.0.1:1883 with MQTT 5 (inbox session kept 7 d, direct messages expire after 7 d)`,
    /// or `... with MQTT 3.1.1 (the broker refused MQTT 5)`.
    static func line(_ client: ChatClient, address: String, room: RoomName) async -> String {
        let configuration = await client.configuration
        let prefix = "* \(client.me.id.rawValue) in #\(room.rawValue) on \(address) with "
        switch await client.protocolVersion {
        case .v5:
            let session = configuration.inboxSessionExpiry.map { "inbox session kept \(duration($0))" }
                ?? "clean session"
            return prefix + "MQTT 5 (\(session), direct messages expire after \(duration(configuration.directMessageRetention)))"
        case .v3_1_1:
            return prefix + "MQTT 3.1.1" + (await client.fellBackToMQTT311 ? " (the broker refused MQTT 5)" : "")
        case .v3_1:
            return prefix + "MQTT 3.1"
        }
    }

    /// `7 d`, `2 h`, `30 s`: the largest whole unit.
    static func duration(_ seconds: UInt32) -> String {
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("min", 60)] as [(String, UInt32)]
        where seconds >= size && seconds % size == 0 {
            return "\(seconds / size) \(unit)"
        }
        return "\(seconds) s"
    }
}
