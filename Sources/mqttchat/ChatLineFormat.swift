import Foundation
import MQTTChat

/// How `chat` and `history` show people, messages and presence.
enum ChatLineFormat {
    /// The member's name, with its id when the two differ (the id is what `/dm` needs).
    static func display(_ member: ChatMember) -> String {
        let name = member.profile.name
        return name.isEmpty || name == member.id.rawValue ? member.id.rawValue : "\(name) [\(member.id.rawValue)]"
    }

    /// What a message says: its text, or `sent a gift: NAME xCOUNT`.
    static func content(_ record: ChatMessageRecord) -> String {
        switch record.content {
        case .text(let text): text
        case .gift(let gift): "sent a gift: \(gift.name) x\(gift.count)"
        }
    }

    /// A live chat line: `[HH:mm:ss] alice: hello`, `[HH:mm:ss] (dm from alice) psst`, `[HH:mm:ss] (dm to bob) psst`.
    static func live(_ record: ChatMessageRecord) -> String {
        let time = "[\(ClockFormat.time(record.sentAt))]"
        let sender = display(record.sender)
        switch (record.conversation, record.direction) {
        case (.room, _):
            return "\(time) \(sender): \(content(record))"
        case (.direct, .received):
            return "\(time) (dm from \(sender)) \(content(record))"
        case (.direct(let peer), .sent):
            return "\(time) (dm to \(peer.rawValue)) \(content(record))"
        }
    }

    /// A history line: `yyyy-MM-dd HH:mm:ss #room alice: hello` or `yyyy-MM-dd HH:mm:ss @bob alice: psst`.
    static func history(_ record: ChatMessageRecord) -> String {
        let place: String =
            switch record.conversation {
            case .room(let room): "#\(room.rawValue)"
            case .direct(let peer): "@\(peer.rawValue)"
            }
        return "\(ClockFormat.dateTime(record.sentAt)) \(place) \(display(record.sender)): \(content(record))"
    }

    /// A presence line: `[HH:mm:ss] * bob is here`, `... * bob left`, `... * bob went offline`, `... * bob went offline
    /// (no heartbeat)`.
    static func presence(_ change: PresenceChange, at now: Date = Date()) -> String {
        let what: String =
            switch change.kind {
            case .present: "is here"
            case .absent(.leftRoom): "left"
            case .absent(.wentOffline): "went offline"
            // Dropped after 3 missed heartbeats (no will reached us): still "went offline", with the reason added.
            case .absent(.timedOut): "went offline (no heartbeat)"
            }
        return "[\(ClockFormat.time(now))] * \(display(change.member)) \(what)"
    }
}
