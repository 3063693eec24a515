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
