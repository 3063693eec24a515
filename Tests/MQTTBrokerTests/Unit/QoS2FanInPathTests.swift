import Foundation
import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// Fan-in at QoS 2 through the whole broker path (decode, handler, core, outbound flow, encode) on embedded channels:
/// ten publishers, each with 20 messages unacknowledged, into one subscriber whose window is 20, every handshake
/// completed by the test as the load generator completes it.
///
/// It checks that every message arrives exactly once, in order per publisher, that the window is never exceeded and
/// that nothing is left in flight. With `MQTTCHAT_HOTPATH_MESSAGES=N` it also measures: N messages per repetition,
/// best of 7, printed as nanoseconds per message of the broker's user-space path plus this test's own encoding and
/// decoding (no sockets, no kernel, so far less noise than a benchmark over loopback). For that, build optimized:
///
///     swift build -c release -Xswiftc -enable-testing --build-tests --scratch-path .build-rt
///     MQTTCHAT_HOTPATH_MESSAGES=100000 taskset -c 0 swift test -c release -Xswiftc -enable-testing \
///         --scratch-path .build-rt --skip-build --filter QoS2FanInPath
@Suite("QoS 2 fan-in through the broker path")
struct QoS2FanInPathTests {
    static let publisherCount = 10
    static let window = 20

    /// One repetition: `total` messages; returns the seconds it took.
    static func run(total: Int) throws -> Double {
        let broker = EmbeddedBroker {
            $0.maxInflightMessages = window
            $0.maxQueuedMessages = 100_000
        }
        let (subscriber, _) = try broker.connect(ConnectPacket(clientIdentifier: "sub"))
        try subscriber.send(.subscribe(SubscribePacket(packetID: 1, subscriptions: [.init(topicFilter: "bench/#", qos: .exactlyOnce)])))
        _ = try subscriber.received()
        var publishers: [EmbeddedClient] = []
        for index in 0..<publisherCount {
            publishers.append(try broker.connect(ConnectPacket(clientIdentifier: "pub\(index)")).0)
        }
        let perPublisher = total / publisherCount
        let topics = (0..<publisherCount).map { "bench/\($0)" }
        var sent = Array(repeating: 0, count: publisherCount)
        var unacknowledged = Array(repeating: 0, count: publisherCount)
        var nextExpected = Array(repeating: 0, count: publisherCount)
        var delivered = 0
        var subscriberInflight = Set<UInt16>()
        var maxSubscriberInflight = 0

        let start = DispatchTime.now().uptimeNanoseconds
        var rounds = 0
        // Until every message is delivered and every handshake, the last PUBCOMPs included, is complete.
        while delivered < perPublisher * publisherCount || !subscriberInflight.isEmpty || unacknowledged.contains(where: { $0 > 0 }) {
            rounds += 1
            if rounds > total * 4 + 1_000 {
                Issue.record("no progress: \(delivered) of \(perPublisher * publisherCount) delivered")
                break
            }
            // Publishers fill their windows, one read batch each.
            for index in 0..<publisherCount where unacknowledged[index] < window && sent[index] < perPublisher {
                var batch = ByteBuffer()
                while unacknowledged[index] < window, sent[index] < perPublisher {
                    var payload = ByteBuffer()
                    payload.writeInteger(UInt64(sent[index]))
                    payload.writeInteger(UInt64(index))
                    let id = UInt16(sent[index] % 60_000 + 1)
                    try MQTTPacketEncoder.encode(.publish(PublishPacket(topic: topics[index], payload: payload, qos: .exactlyOnce, packetID: id)), into: &batch)
                    sent[index] += 1
                    unacknowledged[index] += 1
                }
                try publishers[index].channel.writeInbound(batch)
            }
            // The subscriber answers what it got: PUBREC for each PUBLISH, PUBCOMP for each PUBREL.
            var answers = ByteBuffer()
            for packet in try subscriber.received() {
                switch packet {
                case .publish(let publish):
                    guard let id = publish.packetID, let sequence = publish.payload.getInteger(at: publish.payload.readerIndex, as: UInt64.self),
                        let index = publish.payload.getInteger(at: publish.payload.readerIndex + 8, as: UInt64.self), Int(index) < publisherCount
                    else {
                        Issue.record("unexpected delivery \(publish)")
                        return 0
                    }
                    #expect(Int(sequence) == nextExpected[Int(index)], "order of publisher \(index)")
                    nextExpected[Int(index)] = Int(sequence) + 1
                    delivered += 1
                    subscriberInflight.insert(id)
                    maxSubscriberInflight = max(maxSubscriberInflight, subscriberInflight.count)
                    try MQTTPacketEncoder.encode(.pubrec(PubRecPacket(packetID: id)), into: &answers)
                case .pubrel(let pubrel):
                    subscriberInflight.remove(pubrel.packetID)
                    try MQTTPacketEncoder.encode(.pubcomp(PubCompPacket(packetID: pubrel.packetID)), into: &answers)
                default:
                    Issue.record("unexpected packet to the subscriber: \(packet)")
                }
            }
            if answers.readableBytes > 0 { try subscriber.channel.writeInbound(answers) }
            // Publishers answer PUBREC with PUBREL; PUBCOMP frees a slot of their window.
            for (index, publisher) in publishers.enumerated() {
                var answers = ByteBuffer()
                for packet in try publisher.received() {
                    switch packet {
                    case .pubrec(let pubrec):
                        try MQTTPacketEncoder.encode(.pubrel(PubRelPacket(packetID: pubrec.packetID)), into: &answers)
                    case .pubcomp:
                        unacknowledged[index] -= 1
                    default:
                        Issue.record("unexpected packet to publisher \(index): \(packet)")
                    }
                }
                if answers.readableBytes > 0 { try publisher.channel.writeInbound(answers) }
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9

        #expect(delivered == perPublisher * publisherCount)
        #expect(nextExpected == Array(repeating: perPublisher, count: publisherCount))
        #expect(maxSubscriberInflight <= window)
        #expect(subscriberInflight.isEmpty)
        #expect(unacknowledged == Array(repeating: 0, count: publisherCount))
        let session = broker.core.session(forClientID: "sub")
        #expect(session?.outbound.inflightCount == 0 && session?.outbound.queuedCount == 0)
        for index in 0..<publisherCount {
            #expect(broker.core.session(forClientID: "pub\(index)")?.inboundQoS2.pendingIDs.isEmpty == true)
        }
        return seconds
    }

    @Test("every message arrives once and in order, within the window, and nothing stays in flight")
    func fanInQoS2() throws {
        let measured = ProcessInfo.processInfo.environment["MQTTCHAT_HOTPATH_MESSAGES"].flatMap(Int.init)
        guard let measured else {
            _ = try Self.run(total: 3_000)
            return
        }
        var best = Double.infinity
        for _ in 0..<7 {
            best = min(best, try Self.run(total: measured))
        }
        print("hot path, QoS 2 fan-in 10 -> 1, window 20: \(Int((best * 1e9 / Double(measured)).rounded())) ns per message (best of 7, \(measured) messages)")
    }
}
