/// The topic aliases an MQTT 5 client set on its connection (MQTT 5.0 3.3.2.3.4): a PUBLISH with a topic and an
/// alias sets the alias; one with an empty topic and an alias uses it. Aliases live as long as the connection and
/// are bounded by the Topic Alias Maximum the broker announced.
struct TopicAliases: Sendable, Hashable {
    private var topics: [UInt16: String] = [:]

    /// The topic a PUBLISH is for, given its `topic` field and Topic Alias; or the rule it breaks.
    mutating func resolve(topic: String, alias: UInt16?, maximum: UInt16) -> Result<String, ProtocolViolation> {
        guard let alias else {
            // An empty topic needs an alias (the decoder lets it through only in MQTT 5).
            return topic.isEmpty ? .failure(.unknownTopicAlias(0)) : .success(topic)
        }
        guard alias != 0, alias <= maximum else { return .failure(.topicAliasOutOfRange(alias)) }
        if topic.isEmpty {
            guard let known = topics[alias] else { return .failure(.unknownTopicAlias(alias)) }
            return .success(known)
        }
        topics[alias] = topic
        return .success(topic)
    }
}

/// The topic aliases the broker sets towards an MQTT 5 client that allows them (its CONNECT's Topic Alias Maximum,
/// MQTT 5.0 3.3.2.3.4): the first PUBLISH of a topic carries the topic and a new alias, later ones an empty topic
/// and the alias. Aliases are handed out until the client's maximum is reached and never reassigned, so a topic
/// never changes alias on a connection; topics beyond the maximum go out in full.
struct OutboundTopicAliases: Sendable, Hashable {
    /// The client's Topic Alias Maximum; 0 (the default) means no aliases.
    let maximum: UInt16
    private var aliases: [String: UInt16] = [:]

    init(maximum: UInt16 = 0) {
        self.maximum = maximum
    }

    /// The alias to send with `topic`, and whether the client already knows it (then the topic is left out).
    mutating func alias(for topic: String) -> (alias: UInt16, known: Bool)? {
        guard maximum > 0 else { return nil }
        if let known = aliases[topic] { return (known, true) }
        guard aliases.count < Int(maximum) else { return nil }
        let alias = UInt16(aliases.count + 1)
        aliases[topic] = alias
        return (alias, false)
    }
}
