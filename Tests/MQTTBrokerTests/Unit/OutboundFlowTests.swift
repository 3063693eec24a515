import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("OutboundFlow")
struct OutboundFlowTests {
    func message(_ n: Int, topic: String = "t", qos: QoS = .atLeastOnce) -> BrokerMessage {
        BrokerMessage(topic: topic, payload: ByteBuffer(string: "m\(n)"), qos: qos, retain: false)
    }

    func payloads(_ actions: [OutboundAction]) -> [String] {
        actions.compactMap {
            if case .publish(let delivery) = $0 { return String(buffer: delivery.message.payload) }
            return nil
        }
    }

    @Test("the inflight window caps unacknowledged messages; the rest queue and leave in order")
    func windowAndQueueOrder() {
        var flow = OutboundFlow(maxInflight: 2, maxQueued: 10)
        _ = flow.resume()
        var sentIDs: [UInt16] = []
        for n in 1...5 {
            let outcome = flow.enqueue(message(n), qos: .atLeastOnce, retain: false)
            if n <= 2 {
                guard case .send(let delivery) = outcome, let id = delivery.packetID else {
                    Issue.record("message \(n) should be sent, got \(outcome)")
                    return
                }
                sentIDs.append(id)
            } else {
                #expect(outcome == .queued)
            }
        }
        #expect(flow.inflightCount == 2)
        #expect(flow.queuedCount == 3)

        // Acknowledging one releases exactly one, the oldest queued.
        #expect(payloads(flow.pubAckReceived(packetID: sentIDs[0])) == ["m3"])
        // An unknown or repeated PUBACK releases nothing.
        #expect(flow.pubAckReceived(packetID: sentIDs[0]).isEmpty)
        #expect(payloads(flow.pubAckReceived(packetID: sentIDs[1])) == ["m4"])
        #expect(flow.queuedCount == 1)
    }

    @Test("an acknowledgement that does not fit its delivery's flow is reported and changes nothing")
    func acknowledgementOutOfFlow() {
        var flow = OutboundFlow(maxInflight: 4, maxQueued: 10)
        _ = flow.resume()
        guard case .send(let q1) = flow.enqueue(message(1), qos: .atLeastOnce, retain: false), let id1 = q1.packetID,
            case .send(let q2) = flow.enqueue(message(2, qos: .exactlyOnce), qos: .exactlyOnce, retain: false),
            let id2 = q2.packetID
        else {
            Issue.record("both messages should be sent at once")
            return
        }
        var actions: [OutboundAction] = []
        #expect(flow.acknowledged(.pubrec, packetID: id1, into: &actions) == .wrongFlow)  // PUBREC for QoS 1
        #expect(flow.acknowledged(.pubcomp, packetID: id1, into: &actions) == .wrongFlow)  // PUBCOMP for QoS 1
        #expect(flow.acknowledged(.puback, packetID: id2, into: &actions) == .wrongFlow)  // PUBACK for QoS 2
        #expect(flow.acknowledged(.pubcomp, packetID: id2, into: &actions) == .wrongFlow)  // PUBCOMP before PUBREL
        #expect(actions.isEmpty)
        #expect(flow.inflightCount == 2)
        // The right ones still complete both flows; a repeated PUBREC is answered again; unknown ids are ignored.
        #expect(flow.acknowledged(.puback, packetID: id1, into: &actions) == .accepted)
        #expect(flow.acknowledged(.pubrec, packetID: id2, into: &actions) == .accepted)
        #expect(flow.acknowledged(.pubrec, packetID: id2, into: &actions) == .accepted)
        #expect(actions == [.pubrel(id2), .pubrel(id2)])
        #expect(flow.acknowledged(.pubcomp, packetID: id2, into: &actions) == .accepted)
        #expect(flow.acknowledged(.puback, packetID: 999, into: &actions) == .unknownPacketID)
        #expect(flow.inflightCount == 0)
    }

    @Test("a new message queues behind older queued ones even when the window has room (order per topic)")
    func newMessagesDoNotOvertakeQueue() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 10)
        // Offline: everything queues.
        #expect(flow.enqueue(message(1), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        let resumed = flow.resume()
        #expect(payloads(resumed) == ["m1"])
        #expect(flow.enqueue(message(3), qos: .atLeastOnce, retain: false) == .queued)
        guard case .publish(let first) = resumed.first, let id = first.packetID else {
            Issue.record("expected a publish")
            return
        }
        #expect(payloads(flow.pubAckReceived(packetID: id)) == ["m2"])
    }

    @Test("queue overflow drops and counts; QoS 0 for offline clients is not queued")
    func queueBoundsAndQoS0() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 2)
        #expect(flow.enqueue(message(1, qos: .atMostOnce), qos: .atMostOnce, retain: false) == .discarded)
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(3), qos: .exactlyOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(4), qos: .atLeastOnce, retain: false) == .dropped)
        #expect(flow.droppedCount == 1)
        _ = flow.resume()
        // Online QoS 0 bypasses the window.
        guard case .send(let delivery) = flow.enqueue(message(5, qos: .atMostOnce), qos: .atMostOnce, retain: false) else {
            Issue.record("QoS 0 should be sent at once")
            return
        }
        #expect(delivery.packetID == nil)
    }

    @Test("packet identifiers wrap from 65535 to 1 and skip identifiers still in flight")
    func packetIDWraparound() {
        var flow = OutboundFlow(maxInflight: 0, maxQueued: 0)
        _ = flow.resume()
        var firstIDs: [UInt16] = []
        for n in 1...3 {
            if case .send(let delivery) = flow.enqueue(message(n), qos: .atLeastOnce, retain: false), let id = delivery.packetID {
                firstIDs.append(id)
            }
        }
        #expect(firstIDs == [1, 2, 3])
        // Complete 3, keep 1 and 2 in flight, then cycle through the whole identifier space.
        _ = flow.pubAckReceived(packetID: 3)
        var lastID: UInt16 = 3
        for n in 4...65535 {
            guard case .send(let delivery) = flow.enqueue(message(n), qos: .atLeastOnce, retain: false), let id = delivery.packetID else {
                Issue.record("message \(n) not sent")
                return
            }
            lastID = id
            _ = flow.pubAckReceived(packetID: id)
        }
        #expect(lastID == 65535)
        // Next after 65535 wraps to 1 and 2, both in flight: the allocator must skip to 3.
        guard case .send(let wrapped) = flow.enqueue(message(0), qos: .atLeastOnce, retain: false) else {
            Issue.record("not sent")
            return
        }
        #expect(wrapped.packetID == 3)
        #expect(flow.inflightCount == 3)
    }

    @Test("with an unlimited window, a message queues once all 65535 identifiers are in flight")
    func identifierSpaceExhausted() {
        var flow = OutboundFlow(maxInflight: 0, maxQueued: 0)
        _ = flow.resume()
        for n in 1...65535 {
            guard case .send = flow.enqueue(message(n), qos: .exactlyOnce, retain: false) else {
                Issue.record("message \(n) not sent")
                return
            }
        }
        #expect(flow.inflightCount == 65535)
        // No identifier is free: queued, not sent with a reused identifier.
        #expect(flow.enqueue(message(0), qos: .exactlyOnce, retain: false) == .queued)
        #expect(flow.queuedCount == 1)
        // Releasing identifier 7 (PUBREC, then PUBCOMP) lets the queued message go out under that identifier.
        #expect(flow.pubRecReceived(packetID: 7) == [.pubrel(7)])
        let released = flow.pubCompReceived(packetID: 7)
        guard released.count == 1, case .publish(let delivery) = released[0] else {
            Issue.record("expected one PUBLISH, got \(released)")
            return
        }
        #expect(delivery.packetID == 7)
        #expect(String(buffer: delivery.message.payload) == "m0")
        #expect(flow.queuedCount == 0)
        #expect(flow.inflightCount == 65535)
    }

    @Test("QoS 2 outbound: PUBREC answers PUBREL, PUBCOMP completes and frees the slot")
    func qos2Outbound() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 10)
        _ = flow.resume()
        guard case .send(let delivery) = flow.enqueue(message(1, qos: .exactlyOnce), qos: .exactlyOnce, retain: false),
            let id = delivery.packetID
        else {
            Issue.record("not sent")
            return
        }
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        // PUBACK is not the right answer for QoS 2: nothing happens.
        #expect(flow.pubAckReceived(packetID: id).isEmpty)
        #expect(flow.pubRecReceived(packetID: id) == [.pubrel(id)])
        #expect(payloads(flow.pubCompReceived(packetID: id)) == ["m2"])
        #expect(flow.inflightCount == 1)
    }

    @Test("resume re-sends unacknowledged PUBLISHes with DUP and pending PUBRELs in order, then the queue")
    func resumeResendsWithDup() {
        var flow = OutboundFlow(maxInflight: 3, maxQueued: 10)
        _ = flow.resume()
        var ids: [UInt16] = []
        for n in 1...3 {
            let qos: QoS = n == 2 ? .exactlyOnce : .atLeastOnce
            if case .send(let delivery) = flow.enqueue(message(n, qos: qos), qos: qos, retain: false), let id = delivery.packetID {
                ids.append(id)
            }
        }
        #expect(ids.count == 3)
        _ = flow.pubRecReceived(packetID: ids[1])  // message 2 is now waiting for PUBCOMP
        flow.suspend()
        #expect(flow.enqueue(message(4), qos: .atLeastOnce, retain: false) == .queued)

        let actions = flow.resume()
        guard actions.count == 3,
            case .publish(let first) = actions[0],
            case .pubrel(let releasedID) = actions[1],
            case .publish(let third) = actions[2]
        else {
            Issue.record("unexpected resume actions \(actions)")
            return
        }
        #expect(first.packetID == ids[0] && first.dup && String(buffer: first.message.payload) == "m1")
        #expect(releasedID == ids[1])
        #expect(third.packetID == ids[2] && third.dup)
        // The window is full (3 inflight), so message 4 stays queued until an acknowledgement.
        #expect(flow.queuedCount == 1)
        let released = flow.pubAckReceived(packetID: ids[0])
        guard case .publish(let fourth) = released.first else {
            Issue.record("queued message not released")
            return
        }
        #expect(!fourth.dup && String(buffer: fourth.message.payload) == "m4")
    }
}

@Suite("InboundQoS2Tracker")
struct InboundQoS2TrackerTests {
    @Test("a re-sent QoS 2 PUBLISH is not forwarded again until PUBREL releases the identifier")
    func duplicateSuppression() {
        var tracker = InboundQoS2Tracker()
        let first = tracker.publishReceived(packetID: 7)
        let duplicate = tracker.publishReceived(packetID: 7)
        let other = tracker.publishReceived(packetID: 8)
        #expect(first && !duplicate && other)
        tracker.releaseReceived(packetID: 7)
        tracker.releaseReceived(packetID: 99)  // unknown: harmless
        #expect(tracker.pendingIDs == [8])
        // After release the identifier may be reused for a new message.
        let reused = tracker.publishReceived(packetID: 7)
        #expect(reused)
    }

    @Test("random receipts and releases agree with a Set, below, across and above the inline limit")
    func agreesWithSetModel() {
        var tracker = InboundQoS2Tracker()
        var model = Set<UInt16>()
        var random = SplitMix64(seed: 0x5EED)  // seeded, so a failure replays
        func next(_ bound: UInt64) -> UInt64 { random.next() % bound }
        var sizesSeen = Set<Int>()
        for step in 0..<20_000 {
            // Phases that grow past the limit and shrink back to empty, so the tracker spills and returns.
            let growing = (step / 2_000) % 2 == 0
            let packetID = UInt16(1 + next(80))
            if !growing, step % 2_000 == 1_999 {
                // The end of a shrinking phase releases what is left, so the walk also passes through empty.
                for pending in model.sorted() {
                    let wasPending = tracker.releaseReceived(packetID: pending)
                    #expect(wasPending, "step \(step)")
                }
                model.removeAll()
            }
            if next(100) < (growing ? 90 : 10) {
                let isNew = tracker.publishReceived(packetID: packetID)
                #expect(isNew == model.insert(packetID).inserted, "step \(step)")
            } else {
                let wasPending = tracker.releaseReceived(packetID: packetID)
                #expect(wasPending == (model.remove(packetID) != nil), "step \(step)")
            }
            #expect(tracker.count == model.count, "step \(step)")
            sizesSeen.insert(model.count)
            if step % 97 == 0 {
                #expect(tracker.pendingIDs == model, "step \(step)")
            }
        }
        #expect(tracker.pendingIDs == model)
        // The walk went through empty, the limit and well past it.
        #expect(sizesSeen.contains(0) && sizesSeen.contains(InboundQoS2Tracker.inlineLimit) && sizesSeen.contains(InboundQoS2Tracker.inlineLimit + 10))
    }

    @Test("a tracker that spilled and emptied works inline again and equals one that never spilled")
    func spillAndReturn() {
        var spilled = InboundQoS2Tracker()
        let many = (1...UInt16(InboundQoS2Tracker.inlineLimit + 5))
        let firstReceipts = many.map { spilled.publishReceived(packetID: $0) }
        let duplicates = many.map { spilled.publishReceived(packetID: $0) }  // after the spill
        #expect(spilled.count == many.count)
        let releases = many.map { spilled.releaseReceived(packetID: $0) }
        #expect(firstReceipts.allSatisfy { $0 } && !duplicates.contains(true) && releases.allSatisfy { $0 })
        #expect(spilled.count == 0)
        let three = spilled.publishReceived(packetID: 3)
        let nine = spilled.publishReceived(packetID: 9)
        let threeAgain = spilled.publishReceived(packetID: 3)
        #expect(three && nine && !threeAgain)
        var direct = InboundQoS2Tracker()
        _ = direct.publishReceived(packetID: 9)
        _ = direct.publishReceived(packetID: 3)
        #expect(spilled == direct)
        #expect(spilled.hashValue == direct.hashValue)
    }
}
