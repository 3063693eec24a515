/// MQTT topic filter matching (MQTT 3.1.1 section 4.7).
///
/// A small internal matcher: `MQTTCore.MQTTTopic` is being written on another branch; once it is merged this can
/// forward to `MQTTTopic.matches(filter:topic:)`.
enum TopicFilter {
    /// Whether `topic` (a topic name) matches `filter` (which may contain `+` and `#`).
    static func matches(filter: String, topic: String) -> Bool {
        let filterLevels = filter.split(separator: "/", omittingEmptySubsequences: false)
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        // Filters starting with a wildcard do not match topics starting with "$" (section 4.7.2).
        if let first = topicLevels.first, first.hasPrefix("$"),
            let firstFilter = filterLevels.first, firstFilter == "+" || firstFilter == "#"
        {
            return false
        }
        var index = 0
        while index < filterLevels.count {
            let level = filterLevels[index]
            if level == "#" { return index == filterLevels.count - 1 }
            guard index < topicLevels.count else { return false }
            if level != "+" && level != topicLevels[index] { return false }
            index += 1
        }
        return index == topicLevels.count
    }
}
