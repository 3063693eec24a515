import MQTTCore
import Testing

@testable import MQTTClient

/// The QoS 0 send queue of the state machine: a publish returns once queued, the queue is bounded, room goes to the
/// longest waiter, and a lost connection frees every place. Plain integers as waiters; no sockets.
@Suite("Client state machine: the QoS 0 send queue")
struct QoS0QueueTests {
    typealias Machine = ClientStateMachine<Int>

    func connectedMachine(limit: Int) -> Machine {
        var machine = Machine(
            reconnect: .exponential(jitter: false), offlineQueueLimit: 10, qos0QueueLimit: limit, seed: 1)
        _ = machine.connectRequested(0)
        _ = machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v3_1_1)
        return machine
    }

    func resumed(_ actions: [Machine.Action]) -> [Int: Completion] {
        var result: [Int: Completion] = [:]
        for case .resume(let waiter, let completion) in actions { result[waiter] = completion }
        return result
    }

    /// Admits and hands over one QoS 0 message under `mid`; returns the error the caller would throw.
    func send(_ machine: inout Machine, mid: Int32, holdingRoom: Bool = false) -> MQTTClientError?? {
        guard case .send(_, let epoch) = machine.admitPublish(qos: .atMostOnce, holdingRoom: holdingRoom) else {
            return .none
        }
        let (error, actions) = machine.publishHandedOver(
            mid: mid, qos: .atMostOnce, countsOffline: false, queuedOffline: false, epoch: epoch, waiter: nil)
        #expect(actions.isEmpty)
        return .some(error)
    }

    @Test("a publish returns once queued; beyond the limit it waits, and a written message hands its place on")
    func boundedQueue() {
        var machine = connectedMachine(limit: 2)
        #expect(send(&machine, mid: 1) == .some(nil))
        #expect(send(&machine, mid: 2) == .some(nil))
        #expect(machine.unwrittenQoS0 == 2)
        #expect(machine.admitPublish(qos: .atMostOnce) == .waitForRoom)
        #expect(machine.waitForRoom(7).isEmpty)
        #expect(machine.admitPublish(qos: .atMostOnce) == .waitForRoom)
        #expect(machine.waitForRoom(8).isEmpty)
        // Message 1 is written: waiter 7 (first in) gets its place; the count stays at the limit.
        #expect(resumed(machine.publishAcknowledged(mid: 1)) == [7: .done])
        #expect(machine.unwrittenQoS0 == 2)
        #expect(send(&machine, mid: 3, holdingRoom: true) == .some(nil))
        #expect(resumed(machine.publishAcknowledged(mid: 2)) == [8: .done])
        #expect(send(&machine, mid: 4, holdingRoom: true) == .some(nil))
        _ = machine.publishAcknowledged(mid: 3)
        _ = machine.publishAcknowledged(mid: 4)
        #expect(machine.unwrittenQoS0 == 0)
        #expect(machine.pendingCount == 0)
    }

    @Test("room freed between the full answer and the wait resumes the waiter at once")
    func roomFreedBeforeWaiting() {
        var machine = connectedMachine(limit: 1)
        #expect(send(&machine, mid: 1) == .some(nil))
        #expect(machine.admitPublish(qos: .atMostOnce) == .waitForRoom)
        #expect(machine.publishAcknowledged(mid: 1).isEmpty)
        #expect(resumed(machine.waitForRoom(5)) == [5: .done])
        #expect(machine.unwrittenQoS0 == 1)
        #expect(send(&machine, mid: 2, holdingRoom: true) == .some(nil))
    }

    @Test("a write reported before the hand-over, and a refusal by libmosquitto, free the place")
    func earlyWriteAndRefusal() {
        var machine = connectedMachine(limit: 1)
        #expect(machine.publishAcknowledged(mid: 4).isEmpty)  // written before the caller registered mid 4
        #expect(send(&machine, mid: 4) == .some(nil))
        #expect(machine.unwrittenQoS0 == 0)
        #expect(machine.pendingCount == 0)
        guard case .send = machine.admitPublish(qos: .atMostOnce) else {
            Issue.record("not admitted")
            return
        }
        #expect(machine.publishRejected(qos: .atMostOnce, countsOffline: false).isEmpty)
        #expect(machine.unwrittenQoS0 == 0)
    }

    @Test("a lost connection fails the waiters, frees every place, and fails a message admitted before it")
    func connectionLost() {
        var machine = connectedMachine(limit: 2)
        #expect(send(&machine, mid: 1) == .some(nil))
        guard case .send(_, let oldEpoch) = machine.admitPublish(qos: .atMostOnce) else {
            Issue.record("not admitted")
            return
        }
        #expect(machine.waitForRoom(9).isEmpty)
        let lost = machine.connectionClosed(cleanly: false, error: .timeout)
        #expect(resumed(lost) == [9: .failed(.notConnected)])
        #expect(machine.unwrittenQoS0 == 1)  // the place admitted before the loss, not yet handed over
        let (error, _) = machine.publishHandedOver(
            mid: 2, qos: .atMostOnce, countsOffline: false, queuedOffline: false, epoch: oldEpoch, waiter: nil)
        #expect(error == .notConnected)
        #expect(machine.unwrittenQoS0 == 0)
        #expect(machine.admitPublish(qos: .atMostOnce) == .reject(.notConnected))
        #expect(resumed(machine.waitForRoom(10)) == [10: .failed(.notConnected)])
    }

    @Test("a caller given a place just before the connection dropped fails and gives the place back")
    func holderFindsConnectionGone() {
        var machine = connectedMachine(limit: 1)
        #expect(send(&machine, mid: 1) == .some(nil))
        #expect(machine.waitForRoom(3).isEmpty)
        #expect(resumed(machine.publishAcknowledged(mid: 1)) == [3: .done])
        _ = machine.connectionClosed(cleanly: false, error: .timeout)
        #expect(machine.admitPublish(qos: .atMostOnce, holdingRoom: true) == .reject(.notConnected))
        #expect(machine.unwrittenQoS0 == 0)
    }
}
