import MQTTCore
import Testing

@testable import MQTTClient

/// The MQTT 5 additions to the client's value types: no sockets, no broker.
@Suite("MQTT 5 client state")
struct MQTT5StateTests {
    typealias Machine = ClientStateMachine<Int>

    func connected() -> Machine {
        var machine = Machine(reconnect: .disabled, offlineQueueLimit: 10, seed: 1)
        _ = machine.connectRequested(0)
        _ = machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v5)
        return machine
    }

    func resumed(_ actions: [Machine.Action]) -> [Int: Completion] {
        var result: [Int: Completion] = [:]
        for case .resume(let waiter, let completion) in actions { result[waiter] = completion }
        return result
    }

    func handOver(_ machine: inout Machine, mid: Int32, waiter: Int) -> [Machine.Action] {
        machine.publishHandedOver(
            mid: mid, qos: .atLeastOnce, countsOffline: false, queuedOffline: false, epoch: machine.epoch,
            waiter: waiter
        ).actions
    }

    @Test("PUBACK reason codes: 0x87 is notAuthorized, other failures keep their code, 0x10 is success")
    func publishReasonCodes() {
        var machine = connected()
        _ = handOver(&machine, mid: 1, waiter: 1)
        _ = handOver(&machine, mid: 2, waiter: 2)
        _ = handOver(&machine, mid: 3, waiter: 3)
        #expect(resumed(machine.publishAcknowledged(mid: 1, reasonCode: 0x87)) == [1: .failed(.notAuthorized)])
        #expect(
            resumed(machine.publishAcknowledged(mid: 2, reasonCode: 0x97, reasonString: "quota"))
                == [2: .failed(.reasonCode(MQTTReasonCode(rawValue: 0x97), reasonString: "quota"))])
        #expect(resumed(machine.publishAcknowledged(mid: 3, reasonCode: 0x10)) == [3: .done])
        // An early failing acknowledgement keeps its failure for the caller that registers late.
        #expect(machine.publishAcknowledged(mid: 4, reasonCode: 0x90).isEmpty)
        #expect(
            resumed(handOver(&machine, mid: 4, waiter: 4))
                == [4: .failed(.reasonCode(MQTTReasonCode(rawValue: 0x90), reasonString: nil))])
        #expect(machine.pendingCount == 0)
    }

    @Test("a multi-filter SUBACK gives one result per filter and records only the granted filters with options")
    func multiFilterSuback() {
        var machine = connected()
        let options = MQTTSubscribeOptions(noLocal: true, retainHandling: .doNotSend, subscriptionIdentifier: 4)
        let subscriptions = ["a", "b", "c"].map { TopicSubscription(filter: $0, qos: .exactlyOnce, options: options) }
        _ = machine.subscribeSent(mid: 5, subscriptions: subscriptions, epoch: machine.epoch, waiter: 1)
        let actions = machine.subackReceived(mid: 5, granted: [2, 0x87, 1])
        #expect(resumed(actions) == [1: .subscribed([.granted(.exactlyOnce), .refused(.notAuthorized), .granted(.atLeastOnce)])])
        #expect(machine.subscriptions.map(\.filter) == ["a", "c"])
        #expect(machine.subscriptions.allSatisfy { $0.options == options })
        // Restored after a reconnect without session, options included.
        _ = machine.connectionClosed(cleanly: false, error: .notConnected)
        var restoring = machine
        _ = restoring.connectRequested(2)
        let restore = restoring.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v5)
        let restored = restore.compactMap { if case .resubscribe(let list) = $0 { list } else { nil } }
        #expect(restored == [[subscriptions[0], subscriptions[2]]])
    }

    @Test("a refused single filter fails with its reason: 0x80 subscriptionRefused, 0x87 notAuthorized")
    func singleFilterRefusals() {
        var machine = connected()
        _ = machine.subscribeSent(
            mid: 1, subscription: TopicSubscription(filter: "x", qos: .atMostOnce), epoch: machine.epoch, waiter: 1)
        _ = machine.subscribeSent(
            mid: 2, subscription: TopicSubscription(filter: "y", qos: .atMostOnce), epoch: machine.epoch, waiter: 2)
        #expect(resumed(machine.subackReceived(mid: 1, granted: [0x80])) == [1: .failed(.subscriptionRefused(filter: "x"))])
        #expect(resumed(machine.subackReceived(mid: 2, granted: [0x87])) == [2: .failed(.notAuthorized)])
    }

    @Test("the CONNACK information is kept; MQTT 5 refusals map to typed errors")
    func connAck() {
        var machine = Machine(reconnect: .disabled, offlineQueueLimit: 10, seed: 1)
        #expect(machine.connAck == nil)
        _ = machine.connectRequested(0)
        let info = MQTTConnAckInfo(sessionPresent: true, assignedClientIdentifier: "auto-1", receiveMaximum: 5)
        _ = machine.connackReceived(code: 0, sessionPresent: true, protocolVersion: .v5, connAck: info)
        #expect(machine.connAck == info)
        #expect(Machine.refusalError(code: 0x87, protocolVersion: .v5) == .notAuthorized)
        #expect(
            Machine.refusalError(code: 0x95, protocolVersion: .v5)
                == .reasonCode(MQTTReasonCode(rawValue: 0x95), reasonString: nil))
    }

    @Test("subscribe options map to the SUBSCRIBE option bits; SUBACK codes to results")
    func optionBits() {
        #expect(MQTTSubscribeOptions().optionBits == 0)
        #expect(MQTTSubscribeOptions().isDefault)
        #expect(MQTTSubscribeOptions(noLocal: true).optionBits == 0x04)
        #expect(MQTTSubscribeOptions(retainAsPublished: true).optionBits == 0x08)
        #expect(MQTTSubscribeOptions(retainHandling: .sendIfNewSubscription).optionBits == 0x10)
        #expect(MQTTSubscribeOptions(noLocal: true, retainHandling: .doNotSend).optionBits == 0x24)
        #expect(!MQTTSubscribeOptions(subscriptionIdentifier: 1).isDefault)
        #expect(MQTTSubscribeResult(code: 1) == .granted(.atLeastOnce))
        #expect(MQTTSubscribeResult(code: 0x80) == .refused(.unspecifiedError))
        #expect(MQTTSubscribeResult(code: 0xA2) == .refused(MQTTReasonCode(rawValue: 0xA2)))
    }

    @Test("publish properties: empty by default, part of message equality, subscription ids are not")
    func messageEquality() {
        #expect(MQTTPublishProperties().isEmpty)
        #expect(!MQTTPublishProperties(userProperties: [MQTTUserProperty("a", "b")]).isEmpty)
        let plain = MQTTMessage(topic: "t", payload: [1])
        let tagged = MQTTMessage(topic: "t", payload: [1], subscriptionIdentifiers: [3])
        let typed = MQTTMessage(topic: "t", payload: [1], properties: MQTTPublishProperties(contentType: "x"))
        #expect(plain == tagged)
        #expect(plain != typed)
    }
}

@Suite("Request tracker")
struct RequestTrackerTests {
    typealias Tracker = RequestTracker<Int>
    let reply = MQTTMessage(topic: "inbox/reply", payload: [1])

    @Test("fresh correlation ids, and the limit refuses one more until a slot is free")
    func limit() throws {
        var tracker = Tracker(limit: 2, prefix: [9])
        let first = try tracker.reserve().get()
        let second = try tracker.reserve().get()
        #expect(first != second && first.first == 9)
        #expect(throws: MQTTClientError.tooManyOutstandingRequests(limit: 2)) { try tracker.reserve().get() }
        #expect(tracker.wait(first, waiter: 1) == nil)
        guard case .resume(1) = tracker.resolve(first, with: .failure(.timeout)) else {
            Issue.record("the waiting caller is resumed")
            return
        }
        #expect(tracker.outstanding == 1)
        #expect(throws: Never.self) { try tracker.reserve().get() }
    }

    @Test("an outcome before the caller waits is kept for it; the first outcome wins; late ones are unknown")
    func ordering() throws {
        var tracker = Tracker(limit: 4)
        let id = try tracker.reserve().get()
        guard case .stored = tracker.resolve(id, with: .success(reply)) else {
            Issue.record("stored for the caller")
            return
        }
        guard case .stored = tracker.resolve(id, with: .failure(.timeout)) else {
            Issue.record("a second outcome is dropped")
            return
        }
        #expect(tracker.wait(id, waiter: 7) == .success(reply))
        #expect(tracker.outstanding == 0)
        guard case .unknown = tracker.resolve(id, with: .success(reply)) else {
            Issue.record("a late response is not ours any more")
            return
        }
        guard case .unknown = tracker.resolve([1, 2, 3], with: .success(reply)) else {
            Issue.record("a foreign correlation id is unknown")
            return
        }
    }

    @Test("failAll returns the waiting callers and fails later waits")
    func failAll() throws {
        var tracker = Tracker(limit: 4)
        let waiting = try tracker.reserve().get()
        let notYet = try tracker.reserve().get()
        #expect(tracker.wait(waiting, waiter: 1) == nil)
        #expect(tracker.failAll() == [1])
        #expect(tracker.wait(notYet, waiter: 2) == .failure(.notConnected))
    }
}
