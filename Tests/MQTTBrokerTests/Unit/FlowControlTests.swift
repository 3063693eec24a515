import MQTTCore
import NIOCore
import NIOEmbedded
import Testing

@testable import MQTTBroker

@Suite("OutboundFlow limits and slow consumers")
struct OutboundFlowLimitTests {
    func message(_ n: Int, bytes: Int = 10) -> BrokerMessage {
        // topic "t" (1 byte) + payload: `bytes` in all.
        BrokerMessage(topic: "t", payload: ByteBuffer(repeating: UInt8(n & 0xff), count: bytes - 1), qos: .atLeastOnce, retain: false)
    }

    @Test("max_queued_bytes: a message that would take the queue above the limit is dropped and counted")
    func queuedBytesLimit() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 0, maxQueuedBytes: 25)
        _ = flow.resume()
        guard case .send(let first) = flow.enqueue(message(0), qos: .atLeastOnce, retain: false) else {
            Issue.record("the first message fills the window")
            return
        }
        #expect(flow.enqueue(message(1), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.queuedBytes == 20)
        // 20 + 10 > 25: dropped, although the message count is unlimited.
        #expect(flow.enqueue(message(3), qos: .atLeastOnce, retain: false) == .dropped)
        #expect(flow.droppedCount == 1)
        // A smaller one still fits.
        #expect(flow.enqueue(message(4, bytes: 5), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.queuedBytes == 25)
        // Draining gives the bytes back.
        let released = flow.pubAckReceived(packetID: first.packetID ?? 0)
        #expect(released.count == 1)
        #expect(flow.queuedBytes == 15)
        #expect(flow.enqueue(message(5), qos: .atLeastOnce, retain: false) == .queued)
    }

    @Test("a queue restored from persistence counts its bytes: the limit holds and draining ends at zero")
    func restoredQueueIsCounted() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 0, maxQueuedBytes: 25)
        let queued = (1...2).map { OutboundFlow.QueuedMessage(message: message($0), qos: .atLeastOnce, retain: false) }
        flow.restore(inflight: [], queued: queued)
        #expect(flow.queuedBytes == 20)
        // 20 + 10 > 25: the restored bytes count against max_queued_bytes.
        #expect(flow.enqueue(message(3), qos: .atLeastOnce, retain: false) == .dropped)
        // Resuming sends one (the window is 1); its acknowledgement releases the other; nothing is left to count.
        let resumed = flow.resume()
        guard resumed.count == 1, case .publish(let first) = resumed[0], let firstID = first.packetID else {
            Issue.record("expected one PUBLISH on resume, got \(resumed)")
            return
        }
        #expect(flow.queuedBytes == 10)
        #expect(flow.pubAckReceived(packetID: firstID).count == 1)
        #expect(flow.queuedBytes == 0)
        #expect(flow.queuedCount == 0)
    }

    @Test("with the window full, queued QoS 0 messages at the head still leave, in order; QoS 1 behind them waits")
    func atMostOnceLeavesPastAFullWindow() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 10, queueQoS0WhileOffline: true)
        // Offline: QoS 0 is queued (queue_qos0_messages), QoS 1 too.
        let qosOrder: [QoS] = [.atLeastOnce, .atMostOnce, .atMostOnce, .atLeastOnce, .atMostOnce]
        for (n, qos) in qosOrder.enumerated() {
            #expect(flow.enqueue(message(n), qos: qos, retain: false) == .queued)
        }
        func sent(_ actions: [OutboundAction]) -> [(Int, QoS)] {
            actions.compactMap {
                guard case .publish(let delivery) = $0 else { return nil }
                return (Int(delivery.message.payload.getInteger(at: delivery.message.payload.readerIndex, as: UInt8.self) ?? 255), delivery.qos)
            }
        }
        // Resume: message 0 fills the window, the two QoS 0 behind it leave, message 3 (QoS 1) waits.
        let resumed = flow.resume()
        #expect(sent(resumed).map(\.0) == [0, 1, 2])
        #expect(flow.queuedCount == 2)
        // Acknowledging message 0 frees the window: 3 goes in flight, then the QoS 0 message 4 follows it.
        guard case .publish(let first) = resumed[0], let firstID = first.packetID else {
            Issue.record("expected message 0 first")
            return
        }
        #expect(sent(flow.pubAckReceived(packetID: firstID)).map(\.0) == [3, 4])
        #expect(flow.queuedCount == 0)
    }

    @Test("either limit drops: max_queued_messages counts messages even when bytes remain")
    func eitherLimit() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 2, maxQueuedBytes: 1000)
        #expect(flow.enqueue(message(1), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(3), qos: .atLeastOnce, retain: false) == .dropped)
        #expect(flow.queuedBytes == 20)
    }

    @Test("watermarks: above half of a limit is high, above three quarters halts, down to a quarter of every limit is low")
    func watermarks() {
        var flow = OutboundFlow(maxInflight: 1, maxQueued: 8, maxQueuedBytes: 0)
        #expect(!flow.isAboveHighWatermark && flow.isBelowLowWatermark)
        for n in 1...4 { _ = flow.enqueue(message(n), qos: .atLeastOnce, retain: false) }
        #expect(!flow.isAboveHighWatermark && !flow.isBelowLowWatermark)
        _ = flow.enqueue(message(5), qos: .atLeastOnce, retain: false)
        #expect(flow.isAboveHighWatermark)
        var bytes = OutboundFlow(maxInflight: 1, maxQueued: 0, maxQueuedBytes: 100)
        for n in 1...6 { _ = bytes.enqueue(message(n), qos: .atLeastOnce, retain: false) }
        #expect(bytes.isAboveHighWatermark)
        // Three quarters of a limit halts a paused publisher's batch: ⌊3n/4⌋ exactly, even for tiny limits.
        for (limit, halt) in [(1, 0), (3, 2), (8, 6), (10, 7)] {
            var flow = OutboundFlow(maxInflight: 1, maxQueued: limit, maxQueuedBytes: 0)
            while flow.queuedCount < halt {
                _ = flow.enqueue(message(flow.queuedCount), qos: .atLeastOnce, retain: false)
                #expect(!flow.isAboveHaltWatermark)
            }
            _ = flow.enqueue(message(halt), qos: .atLeastOnce, retain: false)
            #expect(flow.queuedCount == halt + 1 && flow.isAboveHaltWatermark, "limit \(limit)")
        }
        var haltBytes = OutboundFlow(maxInflight: 1, maxQueued: 0, maxQueuedBytes: 100)
        for n in 1...7 { _ = haltBytes.enqueue(message(n), qos: .atLeastOnce, retain: false) }
        #expect(haltBytes.queuedBytes == 70 && !haltBytes.isAboveHaltWatermark)
        _ = haltBytes.enqueue(message(8), qos: .atLeastOnce, retain: false)
        #expect(haltBytes.queuedBytes == 80 && haltBytes.isAboveHaltWatermark)
        // Without limits nothing is ever dropped, so nothing is ever "high".
        var unlimited = OutboundFlow(maxInflight: 1, maxQueued: 0)
        for n in 1...100 { _ = unlimited.enqueue(message(n), qos: .atLeastOnce, retain: false) }
        #expect(!unlimited.isAboveHighWatermark && !unlimited.isAboveHaltWatermark && unlimited.isBelowLowWatermark)
    }

    @Test("blocked output: QoS 0 is dropped and counted, QoS 1 waits in the queue until unblocked")
    func blockedOutput() {
        var flow = OutboundFlow(maxInflight: 5, maxQueued: 10)
        _ = flow.resume()
        flow.outputBlocked()
        #expect(flow.enqueue(message(1), qos: .atMostOnce, retain: false) == .droppedSlowConsumer)
        #expect(flow.slowConsumerDroppedCount == 1)
        #expect(flow.enqueue(message(2), qos: .atLeastOnce, retain: false) == .queued)
        #expect(flow.enqueue(message(3), qos: .exactlyOnce, retain: false) == .queued)
        #expect(flow.inflightCount == 0)
        let released = flow.outputUnblocked()
        #expect(released.count == 2)
        #expect(flow.inflightCount == 2 && flow.queuedCount == 0)
        // Unblocking twice releases nothing more; QoS 0 flows again.
        #expect(flow.outputUnblocked().isEmpty)
        guard case .send = flow.enqueue(message(4), qos: .atMostOnce, retain: false) else {
            Issue.record("QoS 0 should be sent again")
            return
        }
    }

    @Test("going offline forgets the blocked output of the old connection")
    func suspendClearsBlock() {
        var flow = OutboundFlow(maxInflight: 5, maxQueued: 10)
        _ = flow.resume()
        flow.outputBlocked()
        flow.suspend()
        _ = flow.resume()
        #expect(!flow.isOutputBlocked)
    }
}

@Suite("PendingOutputGate")
struct PendingOutputGateTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test("blocks above the limit, unblocks at half of it")
    func blockAndUnblock() {
        var gate = PendingOutputGate(limit: 1000, timeout: .seconds(30))
        #expect(gate.handed(1000, now: start) == .none)
        #expect(gate.handed(1, now: start) == .block(closeAt: start + .seconds(30)))
        #expect(gate.isBlocked)
        #expect(gate.written(400) == .none)  // 601 > 500
        #expect(gate.written(101) == .unblock)
        #expect(!gate.isBlocked && gate.pendingBytes == 500)
    }

    @Test("growth while blocked closes at the hard bound, once")
    func hardBound() {
        var gate = PendingOutputGate(limit: 100, timeout: nil)
        #expect(gate.handed(90, now: start) == .none)
        #expect(gate.handed(20, now: start) == .block(closeAt: nil))
        #expect(gate.hardLimit == 210)
        #expect(gate.handed(100, now: start) == .none)
        #expect(gate.handed(1, now: start) == .close)
        // Once.
        #expect(gate.handed(1, now: start) == .none)
    }

    @Test("deliveries written while blocked (already in flight) count but never close; a reply past the bound does")
    func deliveriesWhileBlocked() {
        var gate = PendingOutputGate(limit: 100, timeout: nil)
        #expect(gate.handedDelivery(60, now: start) == .none)
        #expect(gate.handedDelivery(60, now: start) == .block(closeAt: nil))
        #expect(gate.hardLimit == 220)
        // A drain that refilled a wide window: far past the hard bound, all of it already in flight.
        for _ in 0..<20 { #expect(gate.handedDelivery(60, now: start) == .none) }
        #expect(gate.pendingBytes == 1320)
        // The count still governs unblocking...
        #expect(gate.written(1200) == .none)
        #expect(gate.written(70) == .unblock)
        // ...and a client that does not read while its replies keep coming is still closed.
        #expect(gate.handedDelivery(200, now: start) == .block(closeAt: nil))
        #expect(gate.handed(300, now: start) == .close)
    }

    @Test("one message far larger than the limit goes out and blocks; small replies after it do not close")
    func largeMessage() {
        var gate = PendingOutputGate(limit: 100, timeout: nil)
        #expect(gate.handed(1000, now: start) == .block(closeAt: nil))
        #expect(gate.hardLimit == 1100)
        #expect(gate.handed(4, now: start) == .none)
        #expect(gate.handed(97, now: start) == .close)
    }

    @Test("the timer closes only when the output stayed blocked for the whole timeout")
    func timeout() {
        var gate = PendingOutputGate(limit: 10, timeout: .seconds(5))
        _ = gate.handed(11, now: start)
        #expect(!gate.timerFired(now: start + .seconds(4)))
        #expect(gate.timerFired(now: start + .seconds(5)))
        _ = gate.written(11)
        #expect(!gate.timerFired(now: start + .seconds(6)))
    }

    @Test("limit 0 disables the gate")
    func disabled() {
        var gate = PendingOutputGate(limit: 0, timeout: .seconds(1))
        #expect(gate.handed(1 << 30, now: start) == .none)
        #expect(!gate.isBlocked)
    }
}

@Suite("PublisherBackpressure")
struct PublisherBackpressureTests {
    typealias Machine = PublisherBackpressure<String, Int>
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    @Test("a congested session pauses each publisher once and resumes them at the low watermark")
    func pauseAndResume() {
        var machine = Machine(stallTimeout: .seconds(2))
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0) == [.pause("a")])
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0).isEmpty)
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "b", now: t0) == [.pause("b")])
        #expect(machine.pausedConnectionCount == 2 && machine.pauseCount == 2)
        // Progress above the high watermark keeps them paused.
        #expect(machine.progress(session: 1, level: .aboveHighWatermark, now: t0 + .milliseconds(500)).isEmpty)
        let resumed = machine.progress(session: 1, level: .belowLowWatermark, now: t0 + .seconds(1))
        #expect(Set(resumed) == [.resume("a"), .resume("b")])
        #expect(machine.pausedConnectionCount == 0 && machine.isIdle)
    }

    @Test("between the watermarks each report of progress resumes one publisher, the one paused longest")
    func resumeOneAtATime() {
        var machine = Machine(stallTimeout: .seconds(2))
        for publisher in ["a", "b", "c"] {
            #expect(machine.queueAboveHighWatermark(session: 1, publisher: publisher, now: t0) == [.pause(publisher)])
        }
        #expect(machine.progress(session: 1, level: .belowHighWatermark, now: t0) == [.resume("a")])
        #expect(machine.isPaused("b") && machine.isPaused("c") && !machine.isPaused("a"))
        // "a" fills the queue again: it goes to the back of the line.
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0) == [.pause("a")])
        #expect(machine.progress(session: 1, level: .aboveHighWatermark, now: t0).isEmpty)
        #expect(machine.progress(session: 1, level: .belowHighWatermark, now: t0) == [.resume("b")])
        // A closed publisher is skipped.
        machine.connectionClosed("c")
        #expect(machine.progress(session: 1, level: .belowHighWatermark, now: t0) == [.resume("a")])
        #expect(machine.progress(session: 1, level: .belowHighWatermark, now: t0).isEmpty)
        #expect(machine.pausedConnectionCount == 0)
    }

    @Test("a publisher resumed by one session stays paused while another holds it")
    func resumeOneHeldElsewhere() {
        var machine = Machine(stallTimeout: .seconds(2))
        _ = machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0)
        _ = machine.queueAboveHighWatermark(session: 2, publisher: "a", now: t0)
        #expect(machine.progress(session: 1, level: .belowHighWatermark, now: t0).isEmpty)
        #expect(machine.isPaused("a"))
        #expect(machine.progress(session: 2, level: .belowHighWatermark, now: t0) == [.resume("a")])
    }

    @Test("a publisher paused for two sessions resumes only when both release it")
    func twoSessions() {
        var machine = Machine(stallTimeout: .seconds(2))
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0) == [.pause("a")])
        #expect(machine.queueAboveHighWatermark(session: 2, publisher: "a", now: t0).isEmpty)
        #expect(machine.progress(session: 1, level: .belowLowWatermark, now: t0).isEmpty)
        #expect(machine.isPaused("a"))
        #expect(machine.sessionGone(2) == [.resume("a")])
    }

    @Test("a session that stops acknowledging releases its publishers after the stall timeout and holds no one back")
    func stall() {
        var machine = Machine(stallTimeout: .seconds(2))
        _ = machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0)
        #expect(machine.nextStallDeadline == t0 + .seconds(2))
        // Progress moves the deadline.
        _ = machine.progress(session: 1, level: .aboveHighWatermark, now: t0 + .seconds(1))
        #expect(machine.checkStalls(now: t0 + .seconds(2)).isEmpty)
        #expect(machine.nextStallDeadline == t0 + .seconds(3))
        #expect(machine.checkStalls(now: t0 + .seconds(3)) == [.resume("a")])
        #expect(machine.nextStallDeadline == nil)
        // Stalled: more messages above the watermark pause no one (its queue fills and drops instead).
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0 + .seconds(4)).isEmpty)
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "b", now: t0 + .seconds(4)).isEmpty)
        // Once it acknowledges again it exerts back-pressure again.
        _ = machine.progress(session: 1, level: .aboveHighWatermark, now: t0 + .seconds(5))
        #expect(machine.queueAboveHighWatermark(session: 1, publisher: "b", now: t0 + .seconds(5)) == [.pause("b")])
    }

    @Test("a closed publisher is forgotten; an offline session releases everyone")
    func closeAndOffline() {
        var machine = Machine(stallTimeout: .seconds(2))
        _ = machine.queueAboveHighWatermark(session: 1, publisher: "a", now: t0)
        _ = machine.queueAboveHighWatermark(session: 1, publisher: "b", now: t0)
        machine.connectionClosed("a")
        #expect(!machine.isPaused("a"))
        #expect(machine.sessionGone(1) == [.resume("b")])
        #expect(machine.sessionGone(1).isEmpty)
    }
}

@Suite("Connection output accounting")
struct ConnectionOutputAccountingTests {
    @Test("flushed bytes are reported back as written, and the stored reporter does not keep the handler alive")
    func reportedAndReleased() throws {
        weak var weakHandler: BrokerConnectionHandler?
        let broker = EmbeddedBroker()
        do {
            let handler = BrokerConnectionHandler(core: broker.core)
            weakHandler = handler
            let channel = EmbeddedChannel(handler: handler, loop: broker.loop)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).wait()
            let client = EmbeddedClient(channel: channel)
            try client.send(.connect(ConnectPacket(clientIdentifier: "acct")))
            guard case .connack = try client.received().first else {
                Issue.record("expected CONNACK")
                return
            }
            // CONNACK was written and flushed: nothing is pending any more.
            #expect(handler.outputGate.pendingBytes == 0)
            #expect(!handler.outputGate.isBlocked)
            try client.send(.disconnect(DisconnectPacket()))
            broker.loop.run()
            _ = try? channel.finish()
        }
        broker.loop.run()
        #expect(weakHandler == nil)
    }
}
