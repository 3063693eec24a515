import MQTTChat

/// Gift totals per sender, and the leaderboard text the bot posts for `/top`.
struct GiftLeaderboard: Sendable {
    /// One sender's standing.
    struct Entry: Sendable, Hashable {
        let member: ChatMember
        let gifts: Int
    }

    private var totals: [UserID: Entry] = [:]

    /// Adds `count` gifts from `member` (the latest profile name wins).
    mutating func record(_ count: Int32, from member: ChatMember) {
        let previous = totals[member.id]?.gifts ?? 0
        totals[member.id] = Entry(member: member, gifts: previous + Int(max(0, count)))
    }

    /// The `limit` senders with the most gifts; ties in id order.
    func top(_ limit: Int) -> [Entry] {
        Array(totals.values.sorted { ($1.gifts, $0.member.id) < ($0.gifts, $1.member.id) }.prefix(limit))
    }

    /// `Gift leaderboard: 1. alice 5, 2. bob 2` (or a note that nobody sent a gift yet).
    func summary(limit: Int = 5) -> String {
        let entries = top(limit)
        guard !entries.isEmpty else { return "Gift leaderboard: no gifts yet. Send one with /gift NAME [COUNT]!" }
        let ranks = entries.enumerated().map { "\($0.offset + 1). \(Self.name(of: $0.element.member)) \($0.element.gifts)" }
        return "Gift leaderboard: " + ranks.joined(separator: ", ")
    }

    /// The name a member shows, or its id if it has none.
    static func name(of member: ChatMember) -> String {
        member.profile.name.isEmpty ? member.id.rawValue : member.profile.name
    }
}
