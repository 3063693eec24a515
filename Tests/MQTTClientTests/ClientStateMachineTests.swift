import MQTTCore
import Testing

@testable import MQTTClient

/// Drives the state machine with plain integers as waiters; no sockets, no clocks, no sleeping.
@Suite("Client state machine")
struct ClientStateMachineTests {
    typealias Machine = ClientStateMachine<Int>

    static let fast = ReconnectPolicy.exponential(jitter: false)

    func states(_ actions: [Machine.Action]) -> [MQTTConnectionState] {
        actions.compactMap { if case .emitState(let state) = $0 { state } else { nil } }
    }

    func resumed(_ actions: [Machine.Action]) -> [Int: Completion] {
        var result: [Int: Completion] = [:]
        for case .resume(let waiter, let completion) in actions { result[waiter] = completion }
        return result
    }

    func scheduled(_ actions: [Machine.Action]) -> (delay: Duration, generation: Int)? {
        for case .scheduleReconnect(let delay, let generation) in actions { return (delay, generation) }
        return nil
    }

    func connected(_ machine: inout Machine) {
        _ = machine.connectRequested(0)
        _ = machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v3_1_1)
    }

    @Test("connect succeeds on CONNACK 0 and resumes the caller")
    func connectSucceeds() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        let start = machine.connectRequested(1)
        #expect(states(start) == [.connecting])
        #expect(start.contains { if case .startConnect = $0 { true } else { false } })
        let ack = machine.connackReceived(code: 0, sessionPresent: true, protocolVersion: .v3_1_1)
        #expect(states(ack) == [.connected(sessionPresent: true)])
        #expect(resumed(ack) == [1: .done])
    }

    @Test("a refused first connect fails the caller with the CONNACK error and does not retry")
    func refusedFirstConnect() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        _ = machine.connectRequested(1)
        #expect(machine.connackReceived(code: 4, sessionPresent: false, protocolVersion: .v3_1_1).isEmpty)
        let closed = machine.connectionClosed(cleanly: false, error: .mosquitto(code: 5, message: "refused"))
        #expect(resumed(closed) == [1: .failed(.badUsernameOrPassword)])
        #expect(states(closed) == [.disconnected(reason: .connectFailed(.badUsernameOrPassword))])
        #expect(scheduled(closed) == nil)
    }

    @Test("a late report of the socket disconnect() closed does not fail the connect() that followed it")
    func lateCloseAfterDisconnect() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        let opened = machine.epoch
        _ = machine.disconnectRequested(1)
        // on_disconnect reports the close: disconnect() returns, and the caller connects again at once.
        #expect(resumed(machine.connectionClosed(cleanly: true, error: .notConnected)) == [1: .done])
        #expect(states(machine.connectRequested(2)) == [.connecting])
        // Then the network thread's own check of the old socket arrives: it must change nothing.
        #expect(machine.socketFoundClosed(openedInEpoch: opened, cleanly: true, error: .mosquitto(code: 0, message: "No error.")).isEmpty)
        #expect(resumed(machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v3_1_1)) == [2: .done])
        // A close nobody reported (a failed TLS handshake) still counts.
        let current = machine.epoch
        let lost = machine.socketFoundClosed(openedInEpoch: current, cleanly: false, error: .timeout)
        #expect(scheduled(lost) != nil)
    }

    @Test("lost connections back off 1, 2, 4 … 64, 64 s and reset after a success")
    func backoffSequence() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        var delays: [Duration] = []
        var actions = machine.connectionClosed(cleanly: false, error: .notConnected)
        #expect(states(actions).first == .disconnected(reason: .connectionLost(.notConnected)))
        for _ in 0..<8 {
            guard let (delay, generation) = scheduled(actions) else {
                Issue.record("no reconnect scheduled")
                return
            }
            delays.append(delay)
            let fired = machine.reconnectTimerFired(generation: generation)
            #expect(states(fired) == [.connecting])
            actions = machine.connectAttemptFailed(.connectionRefused)
            #expect(states(actions).contains(.disconnected(reason: .connectFailed(.connectionRefused))))
        }
        #expect(delays == [1, 2, 4, 8, 16, 32, 64, 64].map { Duration.seconds($0) })

        // A successful reconnect resets the backoff.
        guard let (_, generation) = scheduled(actions) else { return }
        _ = machine.reconnectTimerFired(generation: generation)
        _ = machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v3_1_1)
        let again = machine.connectionClosed(cleanly: false, error: .notConnected)
        #expect(scheduled(again)?.delay == .seconds(1))
        #expect(states(again).last == .reconnecting(attempt: 1, delay: .seconds(1)))
    }

    @Test("no reconnect after a user disconnect, and a stale timer does nothing")
    func noReconnectAfterDisconnect() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        let lost = machine.connectionClosed(cleanly: false, error: .notConnected)
        let generation = scheduled(lost)?.generation ?? -1
        let disconnect = machine.disconnectRequested(7)
        #expect(states(disconnect) == [.closed])
        #expect(resumed(disconnect) == [7: .done])
        #expect(machine.reconnectTimerFired(generation: generation).isEmpty)

        // Disconnect while connected: DISCONNECT then the clean close; nothing is scheduled.
        var other = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&other)
        let request = other.disconnectRequested(8)
        #expect(request.contains { if case .sendDisconnect = $0 { true } else { false } })
        let close = other.connectionClosed(cleanly: true, error: .notConnected)
        #expect(states(close) == [.closed])
        #expect(resumed(close) == [8: .done])
        #expect(scheduled(close) == nil)
    }

    @Test("reconnect disabled: a lost connection ends in disconnected and fails queued publishes")
    func disabledPolicy() {
        var machine = Machine(reconnect: .disabled, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        guard case .send(let counts, let epoch) = machine.admitPublish(qos: .atLeastOnce) else {
            Issue.record("publish not admitted")
            return
        }
        _ = machine.publishHandedOver(
            mid: 5, qos: .atLeastOnce, countsOffline: counts, queuedOffline: false, epoch: epoch, waiter: 3)
        let lost = machine.connectionClosed(cleanly: false, error: .timeout)
        #expect(scheduled(lost) == nil)
        #expect(states(lost) == [.disconnected(reason: .connectionLost(.timeout))])
        #expect(resumed(lost) == [3: .failed(.notConnected)])
    }

    @Test("acks resume the right publish even when they arrive before the mid is registered")
    func pendingAcks() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        #expect(machine.publishAcknowledged(mid: 9).isEmpty)  // early ack
        let early = machine.publishHandedOver(
            mid: 9, qos: .exactlyOnce, countsOffline: false, queuedOffline: false, epoch: machine.epoch, waiter: 1)
        #expect(resumed(early.actions) == [1: .done])
        _ = machine.publishHandedOver(
            mid: 10, qos: .atLeastOnce, countsOffline: false, queuedOffline: false, epoch: machine.epoch, waiter: 2)
        #expect(resumed(machine.publishAcknowledged(mid: 10)) == [2: .done])
        #expect(machine.pendingCount == 0)
    }

    @Test("offline publishes: QoS 1/2 queue up to the limit, then offlineQueueFull; QoS 0 is notConnected")
    func offlineQueue() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 2, seed: 1)
        connected(&machine)
        _ = machine.connectionClosed(cleanly: false, error: .notConnected)
        #expect(machine.admitPublish(qos: .atMostOnce) == .reject(.notConnected))
        #expect(machine.admitPublish(qos: .atLeastOnce) == .send(countsOffline: true, epoch: machine.epoch))
        #expect(machine.admitPublish(qos: .exactlyOnce) == .send(countsOffline: true, epoch: machine.epoch))
        #expect(machine.admitPublish(qos: .atLeastOnce) == .reject(.offlineQueueFull))
        _ = machine.publishHandedOver(
            mid: 1, qos: .atLeastOnce, countsOffline: true, queuedOffline: true, epoch: machine.epoch, waiter: 1)
        // Acknowledged after the reconnect: the slot is free again.
        #expect(resumed(machine.publishAcknowledged(mid: 1)) == [1: .done])
        #expect(machine.offlineQueued == 1)
    }

    @Test("subscriptions: 0x80 is refused; confirmed ones are restored when the session is gone")
    func subscriptionsRestored() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        let epoch = machine.epoch
        let keep = TopicSubscription(filter: "a/#", qos: .atLeastOnce)
        _ = machine.subscribeSent(mid: 1, subscription: keep, epoch: epoch, waiter: 1)
        #expect(resumed(machine.subackReceived(mid: 1, granted: [1])) == [1: .granted(.atLeastOnce)])
        _ = machine.subscribeSent(
            mid: 2, subscription: TopicSubscription(filter: "secret", qos: .atMostOnce), epoch: epoch, waiter: 2)
        #expect(resumed(machine.subackReceived(mid: 2, granted: [0x80])) == [2: .failed(.subscriptionRefused(filter: "secret"))])

        let lost = machine.connectionClosed(cleanly: false, error: .notConnected)
        guard let (_, generation) = scheduled(lost) else { return }
        _ = machine.reconnectTimerFired(generation: generation)
        let withoutSession = machine.connackReceived(code: 0, sessionPresent: false, protocolVersion: .v3_1_1)
        let restored = withoutSession.compactMap { if case .resubscribe(let list) = $0 { list } else { nil } }
        #expect(restored == [[keep]])

        _ = machine.connectionClosed(cleanly: false, error: .notConnected)
        _ = machine.reconnectTimerFired(generation: generation + 1)
        let withSession = machine.connackReceived(code: 0, sessionPresent: true, protocolVersion: .v3_1_1)
        #expect(!withSession.contains { if case .resubscribe = $0 { true } else { false } })
    }

    @Test("a subscribe whose connection died before registration fails instead of hanging")
    func staleSubscribe() {
        var machine = Machine(reconnect: Self.fast, offlineQueueLimit: 10, seed: 1)
        connected(&machine)
        let epoch = machine.epoch
        _ = machine.connectionClosed(cleanly: false, error: .notConnected)
        let late = machine.subscribeSent(
            mid: 3, subscription: TopicSubscription(filter: "x", qos: .atMostOnce), epoch: epoch, waiter: 4)
        #expect(resumed(late) == [4: .failed(.notConnected)])
    }

    @Test("CONNACK codes map to typed errors for MQTT 3.1.1 and 5")
    func refusalCodes() {
        #expect(Machine.refusalError(code: 1, protocolVersion: .v3_1_1) == .unacceptableProtocolVersion)
        #expect(Machine.refusalError(code: 2, protocolVersion: .v3_1_1) == .identifierRejected)
        #expect(Machine.refusalError(code: 3, protocolVersion: .v3_1) == .serverUnavailable)
        #expect(Machine.refusalError(code: 4, protocolVersion: .v3_1_1) == .badUsernameOrPassword)
        #expect(Machine.refusalError(code: 5, protocolVersion: .v3_1_1) == .notAuthorized)
        #expect(Machine.refusalError(code: 0x86, protocolVersion: .v5) == .badUsernameOrPassword)
        #expect(Machine.refusalError(code: 0x87, protocolVersion: .v5) == .notAuthorized)
    }
}

@Suite("Topic filter matching used by messages(matching:)")
struct TopicFilterTests {
    @Test(arguments: [
        ("a/b", "a/b", true), ("a/+", "a/b", true), ("a/+", "a/b/c", false), ("a/#", "a", true),
        ("a/#", "a/b/c", true), ("#", "x/y", true), ("#", "$SYS/x", false), ("+/b", "$SYS/b", false),
        ("a/+/c", "a//c", true), ("a/b", "a/c", false),
    ])
    func matches(filter: String, topic: String, expected: Bool) {
        #expect(MQTTTopic.matches(filter: filter, topic: topic) == expected)
    }
}
