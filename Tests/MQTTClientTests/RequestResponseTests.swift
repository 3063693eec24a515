import Foundation
import LiveTestSupport
import MQTTCore
import Testing

@testable import MQTTClient

@Suite("MQTT 5 request/response through a real broker", .timeLimit(.minutes(1)))
struct RequestResponseTests {
    /// Answers every request on `topic` with its payload reversed, until the returned task is cancelled.
    func startResponder(_ responder: MQTTClient, topic: String) async throws -> Task<Void, Never> {
        let requests = responder.messages(matching: topic)
        try await responder.subscribe(topic, qos: .atLeastOnce)
        return Task {
            for await request in requests {
                try? await responder.respond(
                    to: request, payload: request.payload.reversed(),
                    properties: MQTTPublishProperties(userProperties: [MQTTUserProperty("by", "responder")]))
            }
        }
    }

    @Test("a request gets the matching response; concurrent requests are not mixed up", arguments: mqtt5BrokerKinds)
    func roundTrip(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let requester = try await connectedV5Client(broker, "req")
            let responder = try await connectedV5Client(broker, "resp")
            let topic = "service/\(uniqueID("t"))"
            let serving = try await startResponder(responder, topic: topic)
            defer { serving.cancel() }
            let others = Collector(requester.messages())

            let reply = try await requester.request(topic: topic, payload: Array("abc".utf8), timeout: .seconds(5))
            #expect(reply.payload.text == "cba")
            let inbox = "mqttchat/users/\(requester.configuration.clientID)/inbox/reply"
            #expect(reply.topic == inbox)
            #expect(reply.properties.userProperties == [MQTTUserProperty("by", "responder")])

            let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let reply = try await requester.request(
                            topic: topic, payload: Array("req\(index)".utf8), timeout: .seconds(5))
                        return (index, reply.payload.text)
                    }
                }
                var all: [Int: String] = [:]
                for try await (index, text) in group { all[index] = text }
                return all
            }
            #expect(replies == Dictionary(uniqueKeysWithValues: (0..<10).map { ($0, String("req\($0)".reversed())) }))
            #expect(others.snapshot.isEmpty, "responses are consumed by request, not streamed")
            await requester.disconnect()
            await responder.disconnect()
        }
    }

    @Test("a request nobody answers times out; the outstanding bound is enforced", arguments: mqtt5BrokerKinds)
    func timeoutAndBound(kind: TestBrokerKind) async throws {
        try await withBroker(kind) { broker in
            let requester = try await connectedV5Client(broker, "lonely") { $0.maxOutstandingRequests = 2 }
            let topic = "nobody/\(uniqueID("t"))"
            let start = ContinuousClock.now
            await #expect(throws: MQTTClientError.timeout) {
                _ = try await requester.request(topic: topic, payload: [1], timeout: .milliseconds(300))
            }
            #expect(ContinuousClock.now - start >= .milliseconds(300))

            let waiting = (0..<2).map { index in
                Task { try await requester.request(topic: topic, payload: [UInt8(index)], timeout: .seconds(2)) }
            }
            let reserved = try await poll(every: .milliseconds(10), for: .seconds(2)) {
                requester.engine.requests.withLock { $0.outstanding } == 2
            }
            #expect(reserved)
            await #expect(throws: MQTTClientError.tooManyOutstandingRequests(limit: 2)) {
                _ = try await requester.request(topic: topic, payload: [9], timeout: .seconds(1))
            }
            for task in waiting {
                await #expect(throws: MQTTClientError.timeout) { _ = try await task.value }
            }
            // The slots are free again: with a responder the next request succeeds.
            let responder = try await connectedV5Client(broker, "late")
            let serving = try await startResponder(responder, topic: topic)
            defer { serving.cancel() }
            #expect(try await requester.request(topic: topic, payload: [1, 2], timeout: .seconds(5)).payload == [2, 1])
            await #expect(throws: MQTTClientError.noResponseTopic) {
                try await responder.respond(to: MQTTMessage(topic: "x", payload: []), payload: [])
            }
            await requester.disconnect()
            await responder.disconnect()
        }
    }
}
