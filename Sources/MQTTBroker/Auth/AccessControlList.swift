import Foundation
import MQTTCore

/// Who may read and write which topics: an `acl_file` in mosquitto's syntax.
///
/// ```
/// # rules before any `user` line apply to anonymous clients
/// topic read public/#
/// user alice
/// topic readwrite alice/#          # access defaults to readwrite
/// topic deny alice/secret
/// pattern read mqttchat/users/%c/inbox   # patterns apply to every client; %c client id, %u user name
/// ```
///
/// Semantics (``ClientAccessPolicy`` applies them):
/// - The rules of a client are those of its `user` section (or the anonymous section when it sent no user
///   name) plus every `pattern` line, with `%c`/`%u` substituted. A pattern that mentions `%u` does not apply
///   to anonymous clients.
/// - Anything not granted is denied. `deny` wins over every grant, wherever it is written.
/// - Topics in rules are topic filters: `+` and `#` match as in subscriptions, and a wildcard in the first
///   level does not match `$SYS/...` (write `$SYS/#`).
public struct AccessControlList: Sendable, Hashable {
    /// What a rule allows.
    public enum Access: String, Sendable, Hashable {
        /// Receive messages (and subscribe).
        case read
        /// Publish.
        case write
        /// Both.
        case readwrite
        /// Neither, overriding any grant.
        case deny
    }

    /// One `topic` or `pattern` line.
    public struct Rule: Sendable, Hashable {
        /// What the rule allows.
        public let access: Access
        /// The topic filter as written, `%c` and `%u` included.
        public let topic: String
        let template: ACLTopicTemplate

        /// Creates a rule; `topic` must be a valid topic filter.
        public init(access: Access, topic: String) {
            self.access = access
            self.topic = topic
            self.template = ACLTopicTemplate(topic)
        }
    }

    /// `topic` lines before the first `user` line: the rules of clients without a user name.
    public private(set) var anonymousRules: [Rule] = []
    /// `topic` lines per `user` section.
    public private(set) var userRules: [String: [Rule]] = [:]
    /// `pattern` lines, which apply to every client.
    public private(set) var patternRules: [Rule] = []

    /// An empty list, which denies everything.
    public init() {}

    /// Parses ACL file text; `source` names it in errors.
    public init(parsing text: String, source: String = "<acl file>") throws(AccessControlListError) {
        var currentUser: String?
        for (index, rawLine) in ConfigText.lines(of: text).enumerated() {
            let number = index + 1
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            // Only whole lines are comments: `#` is also the multi-level wildcard.
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let (keyword, rest) = Self.splitFirstWord(line)
            switch keyword {
            case "user":
                guard !rest.isEmpty else { throw .missingValue(source: source, line: number, keyword: keyword) }
                currentUser = rest
                userRules[rest, default: []] += []
            case "topic", "pattern":
                let rule = try Self.parseRule(rest, source: source, line: number, keyword: keyword)
                if keyword == "pattern" {
                    patternRules.append(rule)
                } else if let currentUser {
                    userRules[currentUser, default: []].append(rule)
                } else {
                    anonymousRules.append(rule)
                }
            default:
                throw .unknownKeyword(source: source, line: number, keyword: keyword)
            }
        }
    }

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(AccessControlListError) -> AccessControlList {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, reason: String(describing: error))
        }
        return try AccessControlList(parsing: text, source: path)
    }

    /// The rules of one client, resolved.
    public func policy(clientID: String, username: String?) -> ClientAccessPolicy {
        var rules = username.map { userRules[$0] ?? [] } ?? anonymousRules
        rules += patternRules.filter { username != nil || !$0.template.usesUsername }
        return ClientAccessPolicy(
            rules: rules.map { ($0.access, $0.template.resolved(clientID: clientID, username: username)) })
    }

    private static func parseRule(
        _ rest: String, source: String, line: Int, keyword: String
    ) throws(AccessControlListError) -> Rule {
        let (first, remainder) = splitFirstWord(rest)
        let access: Access
        let topic: String
        if let named = Access(rawValue: first), !remainder.isEmpty {
            access = named
            topic = remainder
        } else {
            access = .readwrite
            topic = rest
        }
        guard !topic.isEmpty else { throw .missingValue(source: source, line: line, keyword: keyword) }
        do {
            try MQTTTopic.validateFilter(topic)
        } catch {
            throw .invalidTopic(source: source, line: line, topic: topic)
        }
        return Rule(access: access, topic: topic)
    }

    /// The first space-separated word and the trimmed rest (which may contain spaces: topics and user names can).
    private static func splitFirstWord(_ text: String) -> (String, String) {
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, "") }
        return (String(text[..<space]), text[space...].trimmingCharacters(in: .whitespaces))
    }
}

/// Why an ACL file could not be used.
public enum AccessControlListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// A line starts with something other than `user`, `topic` or `pattern`.
    case unknownKeyword(source: String, line: Int, keyword: String)
    /// `user`, `topic` or `pattern` without its value.
    case missingValue(source: String, line: Int, keyword: String)
    /// The topic is not a valid topic filter (e.g. `a/#/b`, `a+`).
    case invalidTopic(source: String, line: Int, topic: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read acl file \(path): \(reason)"
        case .unknownKeyword(let source, let line, let keyword):
            return "\(source):\(line): unknown keyword '\(keyword)' (expected user, topic or pattern)"
        case .missingValue(let source, let line, let keyword): return "\(source):\(line): '\(keyword)' needs a value"
        case .invalidTopic(let source, let line, let topic): return "\(source):\(line): invalid topic filter '\(topic)'"
        }
    }
}
