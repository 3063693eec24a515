import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("Route cache (live)")
struct RouteCacheLiveTests {
    /// Publishes `count` QoS 0 messages to `topic` and reads them all back from `subscriber`.
    private func publishAndDrain(
        _ count: Int, to topic: String, from publisher: LiveClient, readBy subscriber: LiveClient
    ) async throws {
        for n in 0..<count {
            try await publisher.send(.publish(PublishPacket(topic: topic, payload: ByteBuffer(string: "\(topic) \(n)"))))
        }
        for n in 0..<count {
            #expect(String(buffer: try await subscriber.nextPublish().payload) == "\(topic) \(n)")
        }
    }

    @Test("a topic routed from the cache over and over reaches a subscriber that joined since, after other topics refilled it")
    func cachedRouteFollowsANewSubscription() async throws {
        try await withLiveBroker(loops: 1, { $0.parkIdleConnectionsAfter = nil }) { _, address in
            let (early, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "early"))
            _ = try await early.subscribe("route/+", qos: .atMostOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "pub"))
            // More routings than the cache's warm-up: "route/t" is cached, then found again and again.
            let warm = RouteCache<SessionKey>().warmUpRoutes + 8
            try await publishAndDrain(warm, to: "route/t", from: publisher, readBy: early)

            // The subscriptions change (the cache is cleared). Exactly a warm-up's worth of another topic then
            // stores that topic, and nothing has been found in the cache since the change: the moment a route
            // remembered from before the change would be answered.
            let (late, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "late"))
            _ = try await late.subscribe("route/t", qos: .atMostOnce)
            try await publishAndDrain(RouteCache<SessionKey>().warmUpRoutes, to: "route/other", from: publisher, readBy: early)

            // "route/t" again: routed for both subscribers, not from a route found before the change.
            try await publisher.send(.publish(PublishPacket(topic: "route/t", payload: ByteBuffer(string: "after"))))
            #expect(String(buffer: try await early.nextPublish().payload) == "after")
            #expect(String(buffer: try await late.nextPublish().payload) == "after")
            await publisher.close()
            await late.close()
            await early.close()
        }
    }
}
