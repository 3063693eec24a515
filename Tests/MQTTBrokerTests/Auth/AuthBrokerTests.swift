import Foundation
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The auth hooks inside the broker: real connection handlers and core on an embedded loop.
@Suite("Auth: broker hooks (CONNECT, SUBSCRIBE, PUBLISH, delivery, max_connections) and config options")
struct AuthBrokerTests {
    static let acl = """
        pattern read mqttchat/users/%c/inbox
        pattern write mqttchat/users/+/inbox
        pattern readwrite mqttchat/rooms/#
        user spy
        topic read #
        topic deny secret/#
        """

    func broker(acl text: String = AuthBrokerTests.acl, _ configure: (inout BrokerConfiguration) -> Void = { _ in }) throws -> EmbeddedBroker {
        let acl = try AccessControlList(parsing: text)
        return EmbeddedBroker {
            $0.accessControl = acl
            configure(&$0)
        }
    }

    func subscribe(_ client: EmbeddedClient, _ filters: [String], id: UInt16 = 1) throws -> [SubAckReturnCode] {
        try client.send(.subscribe(SubscribePacket(packetID: id, subscriptions: filters.map { .init(topicFilter: $0, qos: .atLeastOnce) })))
        var codes: [SubAckReturnCode] = []
        for packet in try client.received() {
            if case .suback(let suback) = packet {
                codes = suback.returnCodes
            } else {
                client.backlog.append(packet)  // retained messages that follow the SUBACK
            }
        }
        return codes
    }

    func publish(_ client: EmbeddedClient, _ topic: String, qos: QoS = .atMostOnce, retain: Bool = false, id: UInt16? = nil) throws {
        try client.send(.publish(PublishPacket(topic: topic, payload: ByteBuffer(string: topic), qos: qos, retain: retain, packetID: id)))
    }

    @Test("SUBSCRIBE to another client's inbox gets 0x80 per filter; the own inbox is granted")
    func subscribeRefusedPerFilter() throws {
        let broker = try broker()
        let (alice, _) = try broker.connect(ConnectPacket(clientIdentifier: "alice"))
        let codes = try subscribe(alice, ["mqttchat/users/alice/inbox", "mqttchat/users/bob/inbox", "mqttchat/users/+/inbox", "mqttchat/rooms/#"])
        #expect(codes == [.granted(.atLeastOnce), .failure, .failure, .granted(.atLeastOnce)])
        let (bob, _) = try broker.connect(ConnectPacket(clientIdentifier: "bob"))
        try publish(bob, "mqttchat/users/alice/inbox")
        try publish(bob, "mqttchat/users/bob/inbox")
        #expect(try alice.receivedPublishes().map(\.topic) == ["mqttchat/users/alice/inbox"])
    }

    @Test("a denied PUBLISH is acknowledged (PUBACK, PUBREC) but not delivered")
    func denyPublishAcknowledgedNotRouted() throws {
        let broker = try broker()
        let (spy, _) = try broker.connect(ConnectPacket(clientIdentifier: "s", username: "spy"))
        #expect(try subscribe(spy, ["#"]) == [.granted(.atLeastOnce)])
        let (writer, _) = try broker.connect(ConnectPacket(clientIdentifier: "w"))
        try publish(writer, "mqttchat/users/alice/status", qos: .atLeastOnce, id: 1)   // no write grant
        try publish(writer, "mqttchat/rooms/r", qos: .exactlyOnce, id: 2)              // allowed
        try publish(writer, "other", qos: .exactlyOnce, id: 3)                          // no write grant
        let acks = try writer.received()
        #expect(acks == [.puback(PubAckPacket(packetID: 1)), .pubrec(PubRecPacket(packetID: 2)), .pubrec(PubRecPacket(packetID: 3))])
        #expect(try spy.receivedPublishes().map(\.topic) == ["mqttchat/rooms/r"])
    }

    @Test("a # subscriber receives nothing it cannot read, retained messages included")
    func deliveryFiltered() throws {
        let broker = try broker(acl: Self.acl + "\nuser admin\ntopic readwrite #")
        let (admin, _) = try broker.connect(ConnectPacket(clientIdentifier: "admin", username: "admin"))
        try publish(admin, "secret/plans", retain: true)
        try publish(admin, "news", retain: true)
        let (spy, _) = try broker.connect(ConnectPacket(clientIdentifier: "s", username: "spy"))
        #expect(try subscribe(spy, ["#"]) == [.granted(.atLeastOnce)])
        #expect(try spy.receivedPublishes().map(\.topic) == ["news"])
        try publish(admin, "secret/more")
        try publish(admin, "mqttchat/rooms/x")
        #expect(try spy.receivedPublishes().map(\.topic) == ["mqttchat/rooms/x"])
    }

    @Test("the policy follows the identity of each CONNECT, also for a resumed session")
    func policyPerConnect() throws {
        let broker = try broker(acl: Self.acl + "\nuser admin\ntopic readwrite #")
        let (first, _) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: "c", username: "admin"))
        #expect(try subscribe(first, ["#"]) == [.granted(.atLeastOnce)])
        first.dropConnection()
        let (second, connack) = try broker.connect(ConnectPacket(cleanSession: false, clientIdentifier: "c", username: "nobody"))
        #expect(connack?.sessionPresent == true)
        let (admin, _) = try broker.connect(ConnectPacket(clientIdentifier: "admin", username: "admin"))
        try publish(admin, "anything")
        try publish(admin, "mqttchat/rooms/r")
        #expect(try second.receivedPublishes().map(\.topic) == ["mqttchat/rooms/r"])
    }

    @Test("a will on a topic the client may not write is dropped")
    func willNeedsWriteAccess() throws {
        let broker = try broker()
        let (watcher, _) = try broker.connect(ConnectPacket(clientIdentifier: "w", username: "spy"))
        _ = try subscribe(watcher, ["#"])
        let denied = ConnectPacket.Will(topic: "forbidden", payload: ByteBuffer(string: "x"))
        let (a, _) = try broker.connect(ConnectPacket(clientIdentifier: "a", will: denied))
        let allowed = ConnectPacket.Will(topic: "mqttchat/rooms/r", payload: ByteBuffer(string: "y"))
        let (b, _) = try broker.connect(ConnectPacket(clientIdentifier: "b", will: allowed))
        a.dropConnection()
        b.dropConnection()
        #expect(try watcher.receivedPublishes().map(\.topic) == ["mqttchat/rooms/r"])
    }

    @Test("max_connections: the socket beyond the limit is closed at accept; a freed slot is reusable")
    func maxConnections() throws {
        let broker = EmbeddedBroker { $0.maxConnections = 2 }
        let first = try broker.accept()
        let (second, connack) = try broker.connect(ConnectPacket(clientIdentifier: "two"))
        #expect(connack?.returnCode == .accepted)
        let third = try broker.accept()
        #expect(first.isActive && second.isActive)
        #expect(!third.isActive)
        #expect(try third.received().isEmpty)
        first.dropConnection()
        let fourth = try broker.accept()
        #expect(fourth.isActive)
        for unlimited in [0, -1] {
            let open = EmbeddedBroker { $0.maxConnections = unlimited }
            let clients = try (0..<5).map { _ in try open.accept() }
            #expect(clients.allSatisfy { $0.isActive })
        }
    }

    @Test("password_file: known user with the right password is accepted, wrong password and unknown user get 0x04")
    func passwordFileConnect() throws {
        let file = try PasswordFile(parsing: AuthPasswordTests.mosquittoFile)
        let broker = EmbeddedBroker {
            $0.authenticator = PasswordFileAuthenticator(file: file)
            $0.allowAnonymous = false
        }
        let cases: [(String?, String?, ConnectReturnCode)] = [
            ("alice", "correct horse", .accepted),
            ("alice", "wrong", .badUsernameOrPassword),
            ("alice", nil, .badUsernameOrPassword),
            ("mallory", "correct horse", .badUsernameOrPassword),
            (nil, nil, .notAuthorized),
        ]
        for (index, (user, password, code)) in cases.enumerated() {
            let packet = ConnectPacket(clientIdentifier: "c\(index)", username: user, password: password.map { Array($0.utf8) })
            let (client, connack) = try broker.connect(packet)
            #expect(connack?.returnCode == code, "case \(index)")
            #expect(client.isActive == (code == .accepted), "case \(index)")
        }
    }

    @Test("config: password_file, acl_file and max_connections are applied; bad files are errors with the line")
    func configOptions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let passwd = directory.appendingPathComponent("passwd").path
        let acl = directory.appendingPathComponent("acl").path
        let bad = directory.appendingPathComponent("bad").path
        try AuthPasswordTests.mosquittoFile.write(toFile: passwd, atomically: true, encoding: .utf8)
        try Self.acl.write(toFile: acl, atomically: true, encoding: .utf8)
        try "topic read a/#/b\n".write(toFile: bad, atomically: true, encoding: .utf8)

        let settings = try BrokerConfigParser.parse("password_file \(passwd)\nacl_file \(acl)\nmax_connections 7\n")
        let config = settings.configuration
        #expect(config.maxConnections == 7)
        #expect(config.accessControl?.patternRules.count == 3)
        #expect(config.authenticator?.authenticate(username: "alice", password: Array("correct horse".utf8), clientIdentifier: "x") == true)
        #expect(config.authenticator?.authenticate(username: "alice", password: Array("nope".utf8), clientIdentifier: "x") == false)
        #expect(try BrokerConfigParser.parse("max_connections -1").configuration.maxConnections == -1)

        #expect(throws: BrokerConfigError.invalidFile(
            source: "t", line: 2, option: "acl_file", reason: "\(bad):1: invalid topic filter 'a/#/b'")) {
            try BrokerConfigParser.parse("\nacl_file \(bad)", source: "t")
        }
        #expect(throws: BrokerConfigError.invalidFile(
            source: "t", line: 1, option: "password_file",
            reason: "\(bad):1: expected username:hash")) {
            try BrokerConfigParser.parse("password_file \(bad)", source: "t")
        }
        #expect(throws: BrokerConfigError.self) { try BrokerConfigParser.parse("password_file \(directory.path)/missing") }
        #expect(throws: BrokerConfigError.invalidValue(
            source: "t", line: 1, option: "max_connections", value: "-2", expected: "an integer in -1...2147483647")) {
            try BrokerConfigParser.parse("max_connections -2", source: "t")
        }
    }

    @Test("allow_anonymous defaults to true on loopback-only listeners, false otherwise; explicit always wins")
    func anonymousDefault() throws {
        let cases: [(String, Bool)] = [
            ("", true),
            ("listener 1883", true),
            ("listener 1883 127.0.0.1\nlistener 1884 ::1\nlistener 1885 localhost", true),
            ("listener 1883 127.0.0.1\nlistener 1884 0.0.0.0", false),
            ("listener 1884 192.168.1.2", false),
            ("listener 1884 0.0.0.0\nallow_anonymous true", true),
            ("allow_anonymous false\nlistener 1883", false),
        ]
        for (text, expected) in cases {
            #expect(try BrokerConfigParser.parse(text).configuration.allowAnonymous == expected, "\(text)")
        }
    }

    @Test("the shipped chat.acl: own inbox only, any inbox writable, rooms and statuses shared, $SYS read-only")
    func shippedChatACL() throws {
        let acl = try AccessControlList.load(path: shippedConfigPath("chat.acl"))
        let alice = acl.policy(clientID: "alice", username: "alice")
        let guest = acl.policy(clientID: "guest", username: nil)
        for policy in [alice, guest] {
            #expect(policy.mayPublish(to: "mqttchat/users/bob/inbox"))
            #expect(!policy.mayReceive("mqttchat/users/bob/inbox"))
            #expect(!policy.maySubscribe(to: "mqttchat/users/+/inbox"))
            #expect(policy.maySubscribe(to: "mqttchat/rooms/lobby/messages"))
            #expect(policy.maySubscribe(to: "mqttchat/rooms/lobby/members/+"))
            #expect(policy.mayPublish(to: "mqttchat/rooms/lobby/members/alice"))
            #expect(policy.maySubscribe(to: "mqttchat/users/+/status"))
            #expect(policy.maySubscribe(to: "$SYS/#"))
            #expect(!policy.mayPublish(to: "$SYS/broker/uptime"))
            #expect(!policy.maySubscribe(to: "#"))
        }
        #expect(alice.maySubscribe(to: "mqttchat/users/alice/inbox"))
        #expect(alice.mayPublish(to: "mqttchat/users/alice/status"))
        // Ownership follows the proven user name (%u), not the client id anyone can claim.
        #expect(!guest.maySubscribe(to: "mqttchat/users/guest/inbox"))
        #expect(!guest.mayPublish(to: "mqttchat/users/guest/status"))
        let spoof = acl.policy(clientID: "alice", username: "bob")
        #expect(!spoof.maySubscribe(to: "mqttchat/users/alice/inbox"))
        #expect(spoof.maySubscribe(to: "mqttchat/users/bob/inbox"))
    }
}
