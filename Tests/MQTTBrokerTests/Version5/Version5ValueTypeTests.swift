import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The MQTT 5 value types of the broker, one rule at a time.
@Suite("MQTT 5 value types")
struct Version5ValueTypeTests {
    @Test("a session's lifetime: 3.1.1 clean session both discards and ends; MQTT 5 splits the two")
    func sessionLifetime() {
        let clean311 = SessionLifetime(ConnectPacket(cleanSession: true, clientIdentifier: "a"))
        #expect(clean311.startsClean && clean311.endsWithConnection)
        let persistent311 = SessionLifetime(ConnectPacket(cleanSession: false, clientIdentifier: "a"))
        #expect(!persistent311.startsClean && persistent311.expiryInterval == .max)
        let expiring311 = SessionLifetime(
            ConnectPacket(cleanSession: false, clientIdentifier: "a"), persistentClientExpiration: 3_600)
        #expect(expiring311.expiryInterval == 3_600)
        var connect = ConnectPacket(protocolVersion: .v5, cleanSession: true, clientIdentifier: "a")
        connect.properties = MQTTProperties([.sessionExpiryInterval(60)])
        let startsCleanKeeps = SessionLifetime(connect)
        #expect(startsCleanKeeps.startsClean && !startsCleanKeeps.endsWithConnection)
        connect.cleanSession = false
        connect.properties = .none
        let resumesEnds = SessionLifetime(connect)
        #expect(!resumesEnds.startsClean && resumesEnds.endsWithConnection)
    }

    @Test("topic aliases: set with a topic, used with an empty one; 0, above the maximum or unknown are refused")
    func topicAliases() {
        var aliases = TopicAliases()
        #expect(aliases.resolve(topic: "a/b", alias: 1, maximum: 2) == .success("a/b"))
        #expect(aliases.resolve(topic: "", alias: 1, maximum: 2) == .success("a/b"))
        #expect(aliases.resolve(topic: "c", alias: 1, maximum: 2) == .success("c"))
        #expect(aliases.resolve(topic: "", alias: 1, maximum: 2) == .success("c"))
        #expect(aliases.resolve(topic: "", alias: 2, maximum: 2) == .failure(.unknownTopicAlias(2)))
        #expect(aliases.resolve(topic: "x", alias: 0, maximum: 2) == .failure(.topicAliasOutOfRange(0)))
        #expect(aliases.resolve(topic: "x", alias: 3, maximum: 2) == .failure(.topicAliasOutOfRange(3)))
        #expect(aliases.resolve(topic: "", alias: nil, maximum: 2) == .failure(.unknownTopicAlias(0)))
    }

    @Test("outbound aliases: new topics get the next alias up to the client's maximum, then go out in full")
    func outboundTopicAliases() {
        var none = OutboundTopicAliases()
        #expect(none.alias(for: "a") == nil)
        var aliases = OutboundTopicAliases(maximum: 2)
        #expect(aliases.alias(for: "a").map { [Int($0.alias), $0.known ? 1 : 0] } == [1, 0])
        #expect(aliases.alias(for: "a").map { [Int($0.alias), $0.known ? 1 : 0] } == [1, 1])
        #expect(aliases.alias(for: "b").map { [Int($0.alias), $0.known ? 1 : 0] } == [2, 0])
        #expect(aliases.alias(for: "c") == nil)
        #expect(aliases.alias(for: "b").map { [Int($0.alias), $0.known ? 1 : 0] } == [2, 1])
    }

    @Test("a delivery to a session with options: No Local, Retain As Published and identifiers of every match")
    func subscriptionMatch() {
        let subscriptions: [UTF8Key<String>: QoS] = ["a/#": .atMostOnce, "a/+": .exactlyOnce, "$share/g/a/b": .atLeastOnce]
        let options: [UTF8Key<String>: SubscriptionOptions] = [
            "a/#": SubscriptionOptions(noLocal: false, retainAsPublished: true, identifier: 4),
            "a/+": SubscriptionOptions(noLocal: true, retainAsPublished: false, identifier: 9),
        ]
        let fromOther = SubscriptionMatch.resolve(
            topic: "a/b", subscriptions: subscriptions, options: options, publishedBySameSession: false)
        #expect(fromOther?.grantedQoS == .exactlyOnce)
        #expect(fromOther?.retainAsPublished == true)
        #expect(Set(fromOther?.identifiers ?? []) == [4, 9])
        let own = SubscriptionMatch.resolve(
            topic: "a/b", subscriptions: subscriptions, options: options, publishedBySameSession: true)
        #expect(own?.grantedQoS == .atMostOnce, "the No Local filter does not count for the session's own message")
        #expect(own?.identifiers == [4])
        let onlyNoLocal = SubscriptionMatch.resolve(
            topic: "a/b", subscriptions: ["a/+": .atLeastOnce], options: ["a/+": SubscriptionOptions(noLocal: true)],
            publishedBySameSession: true)
        #expect(onlyNoLocal == nil)
    }

    @Test("shared filters: $share/NAME/FILTER with a non-empty name without wildcards")
    func sharedFilters() {
        #expect(SharedFilter("$share/g/a/b") == SharedFilter("$share/g/a/b"))
        #expect(SharedFilter("$share/g/a/#")?.group == "g")
        #expect(SharedFilter("$share/g/a/#")?.filter == "a/#")
        #expect(SharedFilter("$share//a") == nil)
        #expect(SharedFilter("$share/g") == nil)
        #expect(SharedFilter("$share/g/") == nil)
        #expect(SharedFilter("$share/+/a") == nil)
        #expect(SharedFilter("a/b") == nil)
    }

    @Test("shared subscriptions: one member per group in turn, online members first, offline persistent ones last")
    func sharedRoundRobin() {
        let shared = SharedSubscriptions()
        let group = SharedFilter("$share/g/t/#")!
        let (a, b, c) = (SessionKey(rawValue: 1), SessionKey(rawValue: 2), SessionKey(rawValue: 3))
        for key in [a, b, c] { shared.subscribe(key, to: group, qos: .atLeastOnce) }
        func next(_ state: (SessionKey) -> SharedMemberState) -> SessionKey? {
            var chosen: SessionKey?
            shared.forEachDelivery(topic: "t/x", eligible: state) { _, key, _ in chosen = key }
            return chosen
        }
        #expect([next { _ in .online }, next { _ in .online }, next { _ in .online }, next { _ in .online }] == [a, b, c, a])
        #expect(next { $0 == c ? .online : .offline } == c, "b is offline: c, online, goes first")
        #expect(next { _ in .offline } == a, "nobody online: the next offline member queues it")
        #expect(next { _ in .excluded } == nil)
        #expect(shared.hasGroup(matching: "t/y"))
        #expect(!shared.hasGroup(matching: "u"))
        for key in [a, b, c] { shared.unsubscribe(key, from: group) }
        #expect(shared.isEmpty)
    }

    @Test("every server-side close of an MQTT 5 connection has its DISCONNECT reason code, or none")
    func disconnectReasonCodes() {
        #expect(CloseReason.takenOver.disconnectReasonCode == .sessionTakenOver)
        #expect(CloseReason.keepaliveExpired.disconnectReasonCode == .keepAliveTimeout)
        #expect(CloseReason.serverShutdown.disconnectReasonCode == .serverShuttingDown)
        #expect(CloseReason.malformedPacket(.packetTooLarge(size: 10, maximum: 5)).disconnectReasonCode == .packetTooLarge)
        #expect(CloseReason.protocolViolation(.unknownTopicAlias(3)).disconnectReasonCode == .protocolError)
        #expect(CloseReason.protocolViolation(.topicAliasOutOfRange(0)).disconnectReasonCode == .topicAliasInvalid)
        #expect(CloseReason.protocolViolation(.receiveMaximumExceeded(21)).disconnectReasonCode == .receiveMaximumExceeded)
        #expect(CloseReason.protocolViolation(.tooManyTopicLevels(200)).disconnectReasonCode == .malformedPacket)
        #expect(CloseReason.slowConsumer.disconnectReasonCode == .quotaExceeded)
        #expect(CloseReason.clientDisconnected.disconnectReasonCode == nil)
        #expect(CloseReason.connectionLost.disconnectReasonCode == nil)
        #expect(CloseReason.clientDisconnectedWithWill.publishesWill)
    }

    @Test("persistent_client_expiration reads mosquitto's durations")
    func persistentClientExpiration() throws {
        let settings = try BrokerConfigParser.parse("listener 1883\npersistent_client_expiration 2d", source: "t")
        #expect(settings.configuration.persistentClientExpiration == 172_800)
        let weeks = try BrokerConfigParser.parse("listener 1883\npersistent_client_expiration 1w", source: "t")
        #expect(weeks.configuration.persistentClientExpiration == 604_800)
        for bad in ["14", "0d", "xd", "99999999y"] {
            #expect(throws: BrokerConfigError.self) {
                try BrokerConfigParser.parse("listener 1883\npersistent_client_expiration \(bad)", source: "t")
            }
        }
    }

    @Test("an expiring message counts down in whole seconds, rounded up, and never below zero")
    func messageExpiry() {
        let now = NIODeadline.uptimeNanoseconds(10_000_000_000)
        var message = BrokerMessage(topic: "t", payload: ByteBuffer(), qos: .atMostOnce, retain: false)
        #expect(message.secondsLeft(at: now) == nil)
        #expect(!message.hasExpired(at: now))
        message.expiresAt = now + .milliseconds(1_200)
        #expect(message.secondsLeft(at: now) == 2)
        #expect(!message.hasExpired(at: now))
        #expect(message.hasExpired(at: now + .seconds(2)))
        #expect(message.secondsLeft(at: now + .seconds(5)) == 0)
    }

    @Test("expired messages leave the queue before they are sent")
    func queueDropsExpired() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 10)
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var expiring = BrokerMessage(topic: "t", payload: ByteBuffer(string: "old"), qos: .atLeastOnce, retain: false)
        expiring.expiresAt = now + .seconds(1)
        let lasting = BrokerMessage(topic: "t", payload: ByteBuffer(string: "new"), qos: .atLeastOnce, retain: false)
        #expect(flow.enqueue(expiring, qos: .atLeastOnce, retain: false) == .queued)  // offline: queued
        #expect(flow.enqueue(lasting, qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.dropExpired(now: now) == 0)
        #expect(flow.dropExpired(now: now + .seconds(2)) == 1)
        let actions = flow.resume()
        #expect(actions.count == 1)
        if case .publish(let delivery) = actions.first {
            #expect(String(buffer: delivery.message.payload) == "new")
        }
    }

    @Test("a client's Receive Maximum narrows the window; nil restores max_inflight_messages")
    func receiveMaximum() {
        var flow = OutboundFlow(maxInflight: 20, maxQueued: 10)
        flow.limitInflight(toReceiveMaximum: 3)
        #expect(flow.maxInflight == 3)
        flow.limitInflight(toReceiveMaximum: 50)
        #expect(flow.maxInflight == 20)
        flow.limitInflight(toReceiveMaximum: nil)
        #expect(flow.maxInflight == 20)
        var unlimited = OutboundFlow(maxInflight: 0, maxQueued: 10)
        unlimited.limitInflight(toReceiveMaximum: 5)
        #expect(unlimited.maxInflight == 5)
    }
}
