import MQTTCore

/// A topic of an ACL rule, split into levels; `%c` and `%u` are still unresolved in ``template``.
struct ACLTopicTemplate: Sendable, Hashable {
    /// The levels as written in the file.
    let template: [String]

    init(_ text: String) {
        template = MQTTTopic.levels(of: text).map(String.init)
    }

    /// Whether some level mentions the client identifier (`%c`).
    var usesClientID: Bool { template.contains { $0.contains("%c") } }
    /// Whether some level mentions the user name (`%u`).
    var usesUsername: Bool { template.contains { $0.contains("%u") } }

    /// The concrete pattern for one client. Substitution happens inside a level, after splitting, and the result
    /// is always a literal level: a client identifier such as `+`, `#` or `a/b` can never turn into a wildcard or
    /// reach into other levels (mosquitto substitutes first and matches after, so it has to refuse such names).
    func resolved(clientID: String, username: String?) -> ACLTopicPattern {
        ACLTopicPattern(
            levels: template.map { level in
                switch level {
                case "+": return .anyLevel
                case "#": return .anyRemainder
                default: return .literal(Self.substitute(level, clientID: clientID, username: username))
                }
            })
    }

    /// Replaces `%c` and `%u` in one pass, so a client identifier that contains `%u` stays as it is.
    private static func substitute(_ level: String, clientID: String, username: String?) -> String {
        guard level.contains("%") else { return level }
        var result = ""
        var iterator = level.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            switch iterator.next() {
            case "c"?: result += clientID
            case "u"?: result += username ?? "%u"
            case let other?: result += "%\(other)"
            case nil: result += "%"
            }
        }
        return result
    }
}

/// An ACL topic for one client: levels that are literal text or the wildcards `+` and `#`.
struct ACLTopicPattern: Sendable, Hashable {
    enum Level: Sendable, Hashable {
        /// Exactly this text (which may itself contain `+`, `#` or `/` when it came from a substitution).
        case literal(String)
        /// `+`: any one level.
        case anyLevel
        /// `#`: this level and every level below, or none (`a/#` matches `a`).
        case anyRemainder

        /// Whether this is the literal `level`, compared byte for byte (MQTT-4.7.3-4: no normalisation).
        func isLiteral(_ level: Substring) -> Bool {
            guard case .literal(let text) = self else { return false }
            return UTF8Key(text[...]) == UTF8Key(level)
        }
    }

    let levels: [Level]

    /// Whether the topic name (already split at `/`) matches, with MQTT's rule that a wildcard in the first level
    /// does not match a topic starting with `$` (MQTT-4.7.2-1), as mosquitto's ACL matching does.
    func matches(topicLevels topic: [Substring]) -> Bool {
        if let first = topic.first, MQTTTopic.startsWithDollar(first), let head = levels.first,
            !head.isLiteral(first)
        {
            return false
        }
        var index = 0
        for level in levels {
            switch level {
            case .anyRemainder:
                return true
            case .anyLevel:
                guard index < topic.count else { return false }
            case .literal:
                guard index < topic.count, level.isLiteral(topic[index]) else { return false }
            }
            index += 1
        }
        return index == topic.count
    }

    /// Whether every topic the subscription filter (split at `/`) can match is matched by this pattern.
    ///
    /// Level by level: a `#` here covers whatever is left of the filter; a `+` here covers a literal or a `+` of
    /// the filter but not its `#` (which also matches deeper topics); a literal here covers only the same literal.
    /// When the filter ends first, the pattern must end too or continue with just `#` (`a/#` covers `a`).
    func covers(filterLevels filter: [Substring]) -> Bool {
        if let first = filter.first, MQTTTopic.startsWithDollar(first), let head = levels.first,
            !head.isLiteral(first)
        {
            return false
        }
        for (index, level) in levels.enumerated() {
            if level == .anyRemainder { return true }
            guard index < filter.count else { return false }
            switch (level, filter[index]) {
            case (.anyRemainder, _):
                return true
            case (_, "#"):
                return false
            case (.anyLevel, _):
                continue
            case (.literal, "+"):
                return false
            case (.literal, let filterLevel):
                guard level.isLiteral(filterLevel) else { return false }
            }
        }
        return filter.count == levels.count
    }
}
