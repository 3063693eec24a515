import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

extension SubscriptionIndex {
    /// The matches of `topic` as a dictionary, for assertions.
    func matches(topic: String) -> [Subscriber: QoS] {
        var result: [Subscriber: QoS] = [:]
        forEachMatch(topic: topic) { subscriber, qos in result[subscriber] = qos }
        return result
    }
}

@Suite("SubscriptionIndex")
struct SubscriptionIndexTests {
    @Test("wildcards match per level; '#' also matches the parent level")
    func wildcardMatching() {
        let index = SubscriptionIndex<String>()
        index.subscribe("a", to: "sport/tennis/+", qos: .atMostOnce)
        index.subscribe("b", to: "sport/#", qos: .atMostOnce)
        index.subscribe("c", to: "+/+", qos: .atMostOnce)
        index.subscribe("d", to: "#", qos: .atMostOnce)
        index.subscribe("e", to: "sport/tennis/player1", qos: .atMostOnce)
        index.subscribe("f", to: "/+", qos: .atMostOnce)

        #expect(Set(index.matches(topic: "sport/tennis/player1").keys) == ["a", "b", "d", "e"])
        #expect(Set(index.matches(topic: "sport").keys) == ["b", "d"])
        #expect(Set(index.matches(topic: "sport/tennis").keys) == ["b", "c", "d"])
        #expect(Set(index.matches(topic: "/finance").keys) == ["c", "d", "f"])
        #expect(Set(index.matches(topic: "other/x/y").keys) == ["d"])
    }

    @Test("overlapping subscriptions yield one entry per subscriber at the highest QoS")
    func overlapsTakeMaxQoS() {
        let index = SubscriptionIndex<String>()
        index.subscribe("a", to: "x/#", qos: .atMostOnce)
        index.subscribe("a", to: "x/+", qos: .exactlyOnce)
        index.subscribe("a", to: "x/y", qos: .atLeastOnce)
        index.subscribe("b", to: "x/y", qos: .atLeastOnce)
        #expect(index.matches(topic: "x/y") == ["a": .exactlyOnce, "b": .atLeastOnce])
        #expect(index.count == 4)
    }

    @Test("topics starting with '$' are not matched by filters starting with a wildcard")
    func dollarTopics() {
        let index = SubscriptionIndex<String>()
        index.subscribe("all", to: "#", qos: .atMostOnce)
        index.subscribe("plus", to: "+/broker/uptime", qos: .atMostOnce)
        index.subscribe("sys", to: "$SYS/#", qos: .atMostOnce)
        index.subscribe("sysplus", to: "$SYS/+/uptime", qos: .atMostOnce)
        #expect(Set(index.matches(topic: "$SYS/broker/uptime").keys) == ["sys", "sysplus"])
        #expect(Set(index.matches(topic: "$SYS/broker/load").keys) == ["sys"])
        #expect(Set(index.matches(topic: "$other").keys).isEmpty)
        #expect(Set(index.matches(topic: "a/broker/uptime").keys) == ["all", "plus"])
    }

    @Test("re-subscribing replaces the QoS; unsubscribing removes only that filter")
    func replaceAndRemove() {
        let index = SubscriptionIndex<String>()
        #expect(index.subscribe("a", to: "t/+", qos: .atMostOnce))
        #expect(!index.subscribe("a", to: "t/+", qos: .exactlyOnce))
        #expect(index.matches(topic: "t/1") == ["a": .exactlyOnce])
        index.subscribe("a", to: "t/1", qos: .atMostOnce)
        #expect(index.unsubscribe("a", from: "t/+"))
        #expect(!index.unsubscribe("a", from: "t/+"))
        #expect(!index.unsubscribe("a", from: "never/subscribed"))
        #expect(index.matches(topic: "t/1") == ["a": .atMostOnce])
        #expect(index.unsubscribe("a", from: "t/1"))
        #expect(index.matches(topic: "t/1").isEmpty)
        #expect(index.count == 0)
    }
}

extension SubscriptionIndexTests {
    @Test("the trie agrees with the reference matcher on every filter x topic pair, empty levels included")
    func agreesWithReferenceMatcher() {
        let filters = [
            "#", "+", "+/+", "/+", "+/", "a", "a/", "a/#", "a/+", "a/+/c", "a//c", "a/+/#", "/", "//", "+/#",
            "a/b/c", "a/b/c/#", "$SYS/#", "$SYS/+", "+/b/+", "a/b", "b", "/a", "/#", "a/+/+",
        ]
        let topics = [
            "a", "a/", "a/b", "a/b/c", "a/b/c/d", "a//c", "/a", "/", "//", "b", "b/x", "$SYS/x", "$SYS", "/a/b",
            "a/b/", "x/b/y", "\u{00E9}/a", "a/\u{00E9}",
        ]
        let index = SubscriptionIndex<String>()
        for filter in filters {
            index.subscribe(filter, to: filter, qos: .atMostOnce)
        }
        for topic in topics {
            var visited: [String] = []
            index.forEachMatch(topic: topic) { subscriber, _ in visited.append(subscriber) }
            let expected = Set(filters.filter { MQTTTopic.matches(filter: $0, topic: topic) })
            #expect(Set(visited) == expected, "topic \(topic)")
            #expect(visited.count == expected.count, "each subscriber once for \(topic)")
        }
    }

    @Test("levels are matched as bytes: Unicode-equivalent spellings differ, a '/' before a combining mark splits")
    func bytesNotCharacters() {
        // Integer subscribers: as String keys, Unicode-equivalent filters would collapse into one subscriber.
        let filters = [
            "caf\u{00E9}", "cafe\u{0301}", "a/\u{0301}b", "+/\u{0301}b", "a/+", "#", "+/#", "$\u{031E}x/#",
            "caf\u{00E9}/+", "cafe\u{0301}/#",
        ]
        let topics = [
            "caf\u{00E9}", "cafe\u{0301}", "a/\u{0301}b", "a/b", "$\u{031E}x", "$\u{031E}x/y",
            "caf\u{00E9}/z", "cafe\u{0301}/z",
        ]
        let index = SubscriptionIndex<Int>()
        for (subscriber, filter) in filters.enumerated() {
            index.subscribe(subscriber, to: filter, qos: .atMostOnce)
        }
        for topic in topics {
            var visited: [Int] = []
            index.forEachMatch(topic: topic) { subscriber, _ in visited.append(subscriber) }
            let expected = filters.indices.filter { MQTTTopic.matches(filter: filters[$0], topic: topic) }
            #expect(visited.sorted() == expected, "topic \(Array(topic.unicodeScalars))")
        }
        var composed: [Int] = []
        index.forEachMatch(topic: "caf\u{00E9}") { subscriber, _ in composed.append(subscriber) }
        #expect(composed.sorted() == [0, 5, 6], "the byte-equal filter, '#' and '+/#', not the decomposed one")
        #expect(index.unsubscribe(1, from: "cafe\u{0301}"))
        #expect(!index.unsubscribe(1, from: "caf\u{00E9}"), "subscriber 1 never had the composed filter")
    }

    @Test("a subscriber matched by several filters is visited once, at its highest QoS")
    func forEachMatchMergesOverlaps() {
        let index = SubscriptionIndex<String>()
        index.subscribe("a", to: "x/#", qos: .atLeastOnce)
        index.subscribe("a", to: "x/y", qos: .atMostOnce)
        index.subscribe("b", to: "x/y", qos: .exactlyOnce)
        var visits: [String: [QoS]] = [:]
        index.forEachMatch(topic: "x/y") { visits[$0, default: []].append($1) }
        #expect(visits == ["a": [.atLeastOnce], "b": [.exactlyOnce]])
    }
}

@Suite("RetainedStore")
struct RetainedStoreTests {
    func retained(_ topic: String, _ payload: String, qos: QoS = .atMostOnce) -> BrokerMessage {
        BrokerMessage(topic: topic, payload: ByteBuffer(string: payload), qos: qos, retain: true)
    }

    @Test("a newer retained message replaces the stored one; an empty payload deletes it")
    func replaceAndDelete() {
        let store = RetainedStore()
        store.apply(retained("a/b", "one"))
        store.apply(retained("a/b", "two", qos: .atLeastOnce))
        #expect(store.count == 1)
        #expect(store.message(forTopic: "a/b").map { String(buffer: $0.payload) } == "two")
        #expect(store.message(forTopic: "a/b")?.qos == .atLeastOnce)
        store.apply(retained("a/b", ""))
        #expect(store.count == 0)
        #expect(store.message(forTopic: "a/b") == nil)
        store.apply(retained("never/stored", ""))
        #expect(store.count == 0)
    }

    @Test("retained topics are keyed by bytes; '#' skips a '$' followed by a combining mark")
    func bytesNotCharacters() {
        let store = RetainedStore()
        store.apply(retained("caf\u{00E9}", "composed"))
        store.apply(retained("cafe\u{0301}", "decomposed"))
        store.apply(retained("$\u{031E}x", "dollar"))
        #expect(store.count == 3)
        #expect(store.message(forTopic: "caf\u{00E9}").map { String(buffer: $0.payload) } == "composed")
        #expect(store.message(forTopic: "cafe\u{0301}").map { String(buffer: $0.payload) } == "decomposed")
        func payloads(_ filter: String) -> [String] {
            store.messages(matching: filter).map { String(buffer: $0.payload) }.sorted()
        }
        #expect(payloads("caf\u{00E9}") == ["composed"])
        #expect(payloads("#") == ["composed", "decomposed"])
        #expect(payloads("+") == ["composed", "decomposed"])
        #expect(payloads("$\u{031E}x") == ["dollar"])
    }

    @Test("a filter walks only matching topics; wildcards skip '$' topics at the first level")
    func filterMatching() {
        let store = RetainedStore()
        for topic in ["a", "a/b", "a/b/c", "a/x/c", "b/b", "$SYS/broker/uptime"] {
            store.apply(retained(topic, topic))
        }
        func topics(_ filter: String) -> Set<String> { Set(store.messages(matching: filter).map(\.topic)) }
        #expect(topics("a/#") == ["a", "a/b", "a/b/c", "a/x/c"])
        #expect(topics("a/+/c") == ["a/b/c", "a/x/c"])
        #expect(topics("+/b") == ["a/b", "b/b"])
        #expect(topics("#") == ["a", "a/b", "a/b/c", "a/x/c", "b/b"])
        #expect(topics("+/broker/uptime").isEmpty)
        #expect(topics("$SYS/#") == ["$SYS/broker/uptime"])
        #expect(topics("a/b") == ["a/b"])
    }
}

@Suite("BrokerMessage")
struct BrokerMessageTests {
    @Test("a kept message does not pin the read buffer its payload was sliced from")
    func compactionCopiesSmallSlicesOfLargeBuffers() throws {
        var readBuffer = ByteBufferAllocator().buffer(capacity: 65536)
        readBuffer.writeRepeatingByte(0x41, count: 60000)
        let slice = try #require(readBuffer.getSlice(at: 100, length: 16))
        let message = BrokerMessage(topic: "t", payload: slice, qos: .atLeastOnce, retain: false)
        #expect(message.payload.storageCapacity >= 65536)
        var kept = message
        kept.compactForKeeping()
        #expect(kept.payload == slice)
        #expect(kept.payload.storageCapacity <= 16 + BrokerMessage.compactionSlack)

        let tight = BrokerMessage(topic: "t", payload: ByteBuffer(string: "own storage"), qos: .atLeastOnce, retain: false)
        var keptTight = tight
        keptTight.compactForKeeping()
        #expect(keptTight.payload.storageCapacity == tight.payload.storageCapacity)
    }
}

@Suite("TopicLevelKey")
struct TopicLevelKeyTests {
    /// Runs `body` with a borrowing key over the UTF-8 bytes of `level`.
    func withBorrowed<Result>(_ level: String, _ body: (TopicLevelKey) -> Result) -> Result {
        var level = level
        return level.withUTF8 { body(TopicLevelKey(borrowing: UnsafeRawBufferPointer($0))) }
    }

    @Test("an owning and a borrowing key over the same bytes are equal and hash alike", arguments: [
        "", "a", "lobby", "a level longer than fifteen bytes", "caf\u{E9}",
    ])
    func ownedMatchesBorrowed(level: String) {
        let owned = TopicLevelKey(owning: Substring(level))
        withBorrowed(level) { borrowed in
            #expect(owned == borrowed)
            #expect(owned.hashValue == borrowed.hashValue)
            #expect([owned: 1][borrowed] == 1)
        }
    }

    @Test("different bytes are different keys, Unicode-equivalent spellings included")
    func differentBytesDiffer() {
        let owned = TopicLevelKey(owning: "caf\u{E9}")
        withBorrowed("cafe\u{301}") { #expect(owned != $0) }
        withBorrowed("cafe") { #expect(owned != $0) }
        #expect(TopicLevelKey(owning: "a") != TopicLevelKey(owning: "ab"))
    }
}

@Suite("RouteCache in the subscription index")
struct RouteCacheTests {
    /// The (subscriber, QoS) pairs `topic` is routed to, sorted.
    func routes(_ index: SubscriptionIndex<String>, _ topic: String) -> [String] {
        var visited: [String] = []
        index.forEachMatch(topic: topic) { subscriber, qos in visited.append("\(subscriber)@\(qos.rawValue)") }
        return visited.sorted()
    }

    /// Routes `topic` enough times for the cache to be warm and to hold it.
    func warm(_ index: SubscriptionIndex<String>, _ topic: String) {
        for _ in 0...RouteCache<String>().warmUpRoutes { _ = routes(index, topic) }
    }

    @Test("a cached route follows every subscription change: new subscriber, higher QoS, unsubscribe")
    func cachedRoutesAreNeverStale() {
        let index = SubscriptionIndex<String>()
        index.subscribe("a", to: "room/+", qos: .atMostOnce)
        warm(index, "room/1")
        #expect(routes(index, "room/1") == ["a@0"])
        index.subscribe("b", to: "room/#", qos: .exactlyOnce)
        #expect(routes(index, "room/1") == ["a@0", "b@2"])
        warm(index, "room/1")
        index.subscribe("a", to: "room/1", qos: .atLeastOnce)  // a second filter of a's, higher QoS
        #expect(routes(index, "room/1") == ["a@1", "b@2"])
        warm(index, "room/1")
        index.unsubscribe("b", from: "room/#")
        #expect(routes(index, "room/1") == ["a@1"])
        warm(index, "room/1")
        index.unsubscribe("a", from: "room/1")
        index.unsubscribe("a", from: "room/+")
        #expect(routes(index, "room/1") == [])
    }

    @Test("every route agrees with the reference matcher, first from the trie and then from the cache")
    func cacheAgreesWithReferenceMatcher() {
        let filters = ["#", "+/+", "a/#", "a/+", "a/b", "$SYS/#", "+/b/+", "caf\u{E9}/+"]
        let topics = ["a", "a/b", "a/b/c", "x/b/y", "$SYS/x", "caf\u{E9}/1", "cafe\u{301}/1"]
        let index = SubscriptionIndex<String>()
        for filter in filters { index.subscribe(filter, to: filter, qos: .atMostOnce) }
        for round in 0..<(RouteCache<String>().warmUpRoutes + 3) {
            for topic in topics {
                let expected = filters.filter { MQTTTopic.matches(filter: $0, topic: topic) }.map { "\($0)@0" }.sorted()
                #expect(routes(index, topic) == expected, "round \(round), topic \(topic)")
            }
        }
    }

    @Test("the cache holds at most its capacity and match budget; topics beyond them still route")
    func bounded() {
        var warming = RouteCache<String>(capacity: 2, maximumMatches: 3, warmUpRoutes: 2)
        #expect(!warming.acceptsNewRoutes)
        _ = warming.lookup("t1")
        _ = warming.lookup("t1")
        #expect(warming.acceptsNewRoutes)

        var cache = RouteCache<String>(capacity: 2, maximumMatches: 3, warmUpRoutes: 0)
        let one = [RouteCache<String>.Match(subscriber: "s", qos: .atMostOnce)]
        _ = cache.lookup("t1")
        cache.store(one, for: "t1")
        cache.store(one + one + one, for: "t2")  // 1 + 3 > 3 pairs: not stored
        cache.store(one, for: "t3")
        #expect(!cache.acceptsNewRoutes)
        cache.store(one, for: "t4")  // 2 topics held: not stored
        #expect(cache.count == 2)
        #expect(cache.lookup("t1")?.count == 1)
        #expect(cache.lookup("t2") == nil)
        #expect(cache.lookup("t4") == nil)
        cache.clear()
        #expect(cache.count == 0 && cache.lookup("t1") == nil)

        let index = SubscriptionIndex<String>()
        index.subscribe("s", to: "t/+", qos: .atLeastOnce)
        for round in 0..<3 {
            for n in 0..<5_000 {  // more topics than the default capacity
                #expect(routes(index, "t/\(n)") == ["s@1"], "round \(round), topic \(n)")
            }
        }
    }

    @Test("a publisher's hint answers only its own topic, and only until the cache changes")
    func hintsAreNeverStale() {
        var cache = RouteCache<String>(capacity: 4, maximumMatches: 8, warmUpRoutes: 0)
        var hint: RouteCache<String>.Hint?
        cache.store([.init(subscriber: "old", qos: .atMostOnce)], for: "t1")
        cache.store([.init(subscriber: "other", qos: .atMostOnce)], for: "t2")
        #expect(cache.lookup("t1", hint: &hint)?.map(\.subscriber) == ["old"])  // the hint now holds t1's route
        #expect(cache.lookup("t1", hint: &hint)?.map(\.subscriber) == ["old"])  // and answers t1 again
        #expect(cache.lookup("t2", hint: &hint)?.map(\.subscriber) == ["other"])  // but not another topic
        #expect(cache.lookup("t2\u{0}", hint: &hint) == nil)  // nor one it prefixes
        _ = cache.lookup("t1", hint: &hint)
        cache.clear()
        cache.store([.init(subscriber: "other", qos: .atMostOnce)], for: "t2")  // not empty again
        #expect(cache.lookup("t1", hint: &hint) == nil)  // the hint from before the clear is not used
        _ = cache.lookup("t1", hint: &hint)
        cache.store([.init(subscriber: "new", qos: .atLeastOnce)], for: "t1")
        #expect(cache.lookup("t1", hint: &hint)?.map(\.subscriber) == ["new"])
        #expect(cache.lookup("t2", hint: &hint)?.map(\.subscriber) == ["other"])
    }

    @Test("routes through a publisher's hint follow every subscription change")
    func hintedRoutesFollowSubscriptions() {
        let index = SubscriptionIndex<String>()
        var hint: RouteCache<String>.Hint?
        func hinted(_ topic: String) -> [String] {
            var visited: [String] = []
            index.forEachMatch(topic: topic, hint: &hint) { subscriber, qos in visited.append("\(subscriber)@\(qos.rawValue)") }
            return visited.sorted()
        }
        index.subscribe("a", to: "room/+", qos: .atMostOnce)
        for _ in 0...RouteCache<String>().warmUpRoutes { _ = hinted("room/1") }
        #expect(hinted("room/1") == ["a@0"])
        index.subscribe("b", to: "room/#", qos: .exactlyOnce)
        for _ in 0...RouteCache<String>().warmUpRoutes { #expect(hinted("room/1") == ["a@0", "b@2"]) }
        index.unsubscribe("a", from: "room/+")
        #expect(hinted("room/1") == ["b@2"])
        #expect(hinted("room/2") == ["b@2"])
        index.unsubscribe("b", from: "room/#")
        #expect(hinted("room/2") == [])
    }

    @Test("byte-distinct topics have distinct cached routes (MQTT-4.7.3-4)")
    func bytesNotCharacters() {
        let index = SubscriptionIndex<String>()
        index.subscribe("pre", to: "caf\u{E9}", qos: .atMostOnce)
        index.subscribe("de", to: "cafe\u{301}", qos: .atMostOnce)
        warm(index, "caf\u{E9}")
        warm(index, "cafe\u{301}")
        #expect(routes(index, "caf\u{E9}") == ["pre@0"])
        #expect(routes(index, "cafe\u{301}") == ["de@0"])
    }
}
