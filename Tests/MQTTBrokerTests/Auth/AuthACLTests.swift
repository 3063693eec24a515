import Testing

@testable import MQTTBroker

@Suite("Auth: ACL file parsing and matching")
struct AuthACLTests {
    static let text = """
        # anonymous clients (before any user line)
        topic read public/#
        topic anon/write-here

        user alice
        topic readwrite alice/#
        topic deny alice/secret/#
        topic write shared/drop
          topic read shared/+/news
        user bob smith
        topic read bob/#

        pattern read mqttchat/users/%c/inbox
        pattern readwrite home/%u/#
        pattern write mqttchat/users/+/inbox
        pattern read $SYS/#
        """

    @Test("sections, default access, user names with spaces and patterns are parsed as mosquitto does")
    func parsing() throws {
        let acl = try AccessControlList(parsing: Self.text)
        #expect(acl.anonymousRules == [.init(access: .read, topic: "public/#"), .init(access: .readwrite, topic: "anon/write-here")])
        #expect(acl.userRules["alice"]?.count == 4)
        #expect(acl.userRules["alice"]?[1] == .init(access: .deny, topic: "alice/secret/#"))
        #expect(acl.userRules["bob smith"] == [.init(access: .read, topic: "bob/#")])
        #expect(acl.patternRules.map(\.topic) == ["mqttchat/users/%c/inbox", "home/%u/#", "mqttchat/users/+/inbox", "$SYS/#"])
    }

    @Test("a file with Windows line endings gives the same rules")
    func windowsLineEndings() throws {
        let acl = try AccessControlList(parsing: Self.text.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(acl == (try AccessControlList(parsing: Self.text)))
    }

    @Test("bad lines are typed errors with the line number")
    func errors() {
        let cases: [(String, AccessControlListError)] = [
            ("topics read a", .unknownKeyword(source: "a", line: 1, keyword: "topics")),
            ("\nuser", .missingValue(source: "a", line: 2, keyword: "user")),
            ("topic read a/#/b", .invalidTopic(source: "a", line: 1, topic: "a/#/b")),
            ("pattern write a+", .invalidTopic(source: "a", line: 1, topic: "a+")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try AccessControlList(parsing: text, source: "a") }
        }
        // `topic read` alone is a readwrite rule on the topic "read", as in mosquitto.
        #expect((try? AccessControlList(parsing: "topic read"))?.anonymousRules == [.init(access: .readwrite, topic: "read")])
    }

    @Test("publish and receive checks: grants, %c and %u, deny precedence, anonymous section")
    func topicChecks() throws {
        let acl = try AccessControlList(parsing: Self.text)
        let alice = acl.policy(clientID: "alice-phone", username: "alice")
        let anonymous = acl.policy(clientID: "guest", username: nil)
        let bob = acl.policy(clientID: "bob", username: "bob smith")
        // (policy, topic, may publish, may receive)
        let table: [(ClientAccessPolicy, String, Bool, Bool)] = [
            (alice, "alice/x", true, true),
            (alice, "alice", true, true),                          // "alice/#" also matches its parent
            (alice, "alice/secret/key", false, false),              // deny wins over readwrite alice/#
            (alice, "alice/secret", false, false),
            (alice, "shared/drop", true, false),
            (alice, "shared/a/news", false, true),
            (alice, "shared/a/b/news", false, false),
            (alice, "public/x", false, false),                      // the anonymous section is not alice's
            (alice, "mqttchat/users/alice-phone/inbox", true, true),  // %c is the client id
            (alice, "mqttchat/users/alice/inbox", true, false),
            (alice, "home/alice/lights", true, true),               // %u is the user name
            (alice, "home/bob/lights", false, false),
            (alice, "$SYS/broker/uptime", false, true),
            (anonymous, "public/x", false, true),
            (anonymous, "anon/write-here", true, true),
            (anonymous, "home/%u/x", false, false),                 // %u patterns skip anonymous clients
            (anonymous, "mqttchat/users/guest/inbox", true, true),
            (anonymous, "alice/x", false, false),
            (bob, "bob/1", false, true),
            (bob, "mqttchat/users/alice-phone/inbox", true, false),
            (bob, "home/bob smith/a", true, true),
        ]
        for (index, (policy, topic, publish, receive)) in table.enumerated() {
            #expect(policy.mayPublish(to: topic) == publish, "row \(index) publish \(topic)")
            #expect(policy.mayReceive(topic) == receive, "row \(index) receive \(topic)")
        }
        let unknownUser = acl.policy(clientID: "c", username: "nobody")
        #expect(!unknownUser.mayReceive("public/x"), "a user without a section gets only the patterns")
        #expect(unknownUser.mayReceive("mqttchat/users/c/inbox"))
    }

    @Test("wildcard rules do not match $ topics; a client id cannot become a wildcard or reach other levels")
    func substitutionIsLiteral() throws {
        let acl = try AccessControlList(parsing: "pattern read #\npattern read inbox/%c\npattern read +/status")
        let plus = acl.policy(clientID: "+", username: nil)
        #expect(plus.mayReceive("a/b"))
        #expect(!plus.mayReceive("$SYS/broker/uptime"))
        #expect(!plus.mayReceive("$SYS/status"))
        let inbox = try AccessControlList(parsing: "pattern read inbox/%c")
        #expect(!inbox.policy(clientID: "+", username: nil).mayReceive("inbox/alice"))
        #expect(!inbox.policy(clientID: "+", username: nil).maySubscribe(to: "inbox/+"))
        #expect(!inbox.policy(clientID: "#", username: nil).maySubscribe(to: "inbox/#"))
        #expect(!inbox.policy(clientID: "a/b", username: nil).mayReceive("inbox/a/b"))
        #expect(inbox.policy(clientID: "a%ub", username: "x").mayReceive("inbox/a%ub"), "substitution is one pass")
    }

    @Test("literal levels compare bytes, and '#' does not reach a '$' followed by a combining mark")
    func bytesNotCharacters() throws {
        let acl = try AccessControlList(parsing: "pattern read #\npattern readwrite caf\u{00E9}/+")
        let policy = acl.policy(clientID: "c", username: nil)
        #expect(policy.mayPublish(to: "caf\u{00E9}/menu"))
        #expect(!policy.mayPublish(to: "cafe\u{0301}/menu"), "a Unicode-equivalent spelling is another topic")
        let narrow = try AccessControlList(parsing: "pattern read caf\u{00E9}/+").policy(clientID: "c", username: nil)
        #expect(narrow.maySubscribe(to: "caf\u{00E9}/+"))
        #expect(!narrow.maySubscribe(to: "cafe\u{0301}/+"))
        #expect(!narrow.mayReceive("cafe\u{0301}/menu"))
        #expect(policy.mayReceive("a/b"))
        #expect(!policy.mayReceive("$\u{031E}x/y"), "'#' never matches a topic whose first byte is '$'")
    }

    @Test("a subscription is granted only if one read rule covers every topic the filter can match")
    func subscribeRule() throws {
        let acl = try AccessControlList(parsing: """
            pattern read mqttchat/users/%c/inbox
            pattern readwrite mqttchat/rooms/#
            pattern read mqttchat/users/+/status
            pattern read $SYS/#
            pattern read a/+/c
            user spy
            topic read #
            topic deny mqttchat/users/+/inbox
            topic deny secret/#
            """)
        let me = acl.policy(clientID: "me", username: nil)
        let spy = acl.policy(clientID: "spy", username: "spy")
        let table: [(ClientAccessPolicy, String, Bool)] = [
            (me, "mqttchat/users/me/inbox", true),
            (me, "mqttchat/users/+/inbox", false),     // + would match other users' inboxes
            (me, "mqttchat/users/other/inbox", false),
            (me, "mqttchat/users/#", false),
            (me, "mqttchat/rooms/#", true),
            (me, "mqttchat/rooms/+/messages", true),
            (me, "mqttchat/rooms", true),             // "mqttchat/rooms/#" matches its parent
            (me, "mqttchat/#", false),
            (me, "mqttchat/users/+/status", true),
            (me, "mqttchat/users/bob/status", true),
            (me, "mqttchat/users/+/+", false),
            (me, "#", false),
            (me, "+/#", false),
            (me, "$SYS/#", true),
            (me, "$SYS/broker/+", true),
            (me, "a/+/c", true),
            (me, "a/b/c", true),
            (me, "a/#", false),                       // a/# matches a/b/c/d, which a/+/c does not
            (me, "a/+/+", false),
            (me, "a/+/c/#", false),
            (spy, "#", true),                         // granted; the deny holes are enforced per message
            (spy, "mqttchat/#", true),
            (spy, "secret/#", false),                 // wholly denied
            (spy, "secret/x", false),
            (spy, "mqttchat/users/bob/inbox", false),
            (spy, "mqttchat/users/+/inbox", false),
        ]
        for (index, (policy, filter, allowed)) in table.enumerated() {
            #expect(policy.maySubscribe(to: filter) == allowed, "row \(index): \(filter)")
        }
        // "#" does not cover $SYS topics, but the $SYS pattern applies to every client, spy included.
        #expect(spy.maySubscribe(to: "$SYS/#"))
        #expect(!spy.mayReceive("secret/plans"))
        #expect(!spy.mayReceive("mqttchat/users/bob/inbox"))
        #expect(spy.mayReceive("mqttchat/rooms/r/messages"))
    }

    @Test("without an acl_file everything is allowed; an empty one denies everything")
    func unrestrictedAndEmpty() throws {
        let open = ClientAccessPolicy(acl: nil, clientID: "c", username: nil)
        #expect(open.mayPublish(to: "a") && open.mayReceive("$SYS/x") && open.maySubscribe(to: "#"))
        let closed = ClientAccessPolicy(acl: try AccessControlList(parsing: "# nothing\n"), clientID: "c", username: "u")
        #expect(!closed.mayPublish(to: "a") && !closed.mayReceive("a") && !closed.maySubscribe(to: "a"))
    }
}
