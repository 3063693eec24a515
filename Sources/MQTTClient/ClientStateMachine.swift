import MQTTCore

/// A filter with the QoS and (MQTT 5) options it was subscribed with; restored with both after a reconnect.
struct TopicSubscription: Sendable, Hashable {
    var filter: String
    var qos: QoS
    var options = MQTTSubscribeOptions()
}

/// How a waiting operation ends.
enum Completion: Sendable, Hashable {
    /// The operation succeeded.
    case done
    /// A subscription succeeded with this granted QoS.
    case granted(QoS)
    /// A multi-filter SUBSCRIBE was answered: one result per filter, in order.
    case subscribed([MQTTSubscribeResult])
    /// The operation failed.
    case failed(MQTTClientError)
}

/// The connection, reconnect and pending-acknowledgement logic of the client, as a value type that consumes events
/// and returns actions. It never touches libmosquitto, threads or clocks: timers are actions (`scheduleReconnect`)
/// whose expiry comes back as an event (`reconnectTimerFired`), so tests drive it without sleeping.
/// `Waiter` is whatever resumes a caller (a continuation in production, a plain identifier in tests).
struct ClientStateMachine<Waiter: Sendable>: Sendable {
    /// What the driver must do after an event.
    enum Action: Sendable {
        /// Report a new connection state.
        case emitState(MQTTConnectionState)
        /// Resume a waiting caller.
        case resume(Waiter, Completion)
        /// Open the connection (TCP, TLS, CONNECT) on the network thread.
        case startConnect
        /// Call `reconnectTimerFired(generation:)` after `delay`.
        case scheduleReconnect(delay: Duration, generation: Int)
        /// Send DISCONNECT and close the socket.
        case sendDisconnect
        /// Subscribe again to these filters (the broker lost our session).
        case resubscribe([TopicSubscription])
    }

    /// Whether `publish` may hand a message to libmosquitto.
    enum PublishAdmission: Sendable, Hashable {
        /// Pass it on; `countsOffline` records that it took a slot of the offline queue; `epoch` identifies the
        /// connection it was admitted on.
        case send(countsOffline: Bool, epoch: Int)
        /// Fail the call with this error.
        case reject(MQTTClientError)
        /// QoS 0: `qos0QueueLimit` messages wait to be written; call `waitForRoom(_:)`, then admit again
        /// `holdingRoom`.
        case waitForRoom
    }

    enum Phase: Sendable, Hashable {
        /// Created, `connect()` not yet called.
        case idle
        /// A connection attempt is running; `initial` when started by `connect()` (failure is then final).
        case connecting(initial: Bool)
        case connected
        /// Waiting for the reconnect timer of this generation.
        case waitingToReconnect(generation: Int)
        /// Disconnected for good (first connect failed, or reconnecting is disabled).
        case disconnected
        /// `disconnect()` sent DISCONNECT; waiting for the socket to close.
        case disconnecting
        /// `disconnect()` finished.
        case closed
    }

    struct PendingPublish: Sendable {
        var qos: QoS
        var countsOffline: Bool
        /// `nil` at QoS 0: the caller returned when libmosquitto queued the message.
        var waiter: Waiter?
    }

    struct PendingSubscribe: Sendable {
        var subscriptions: [TopicSubscription]
        /// Whether the caller asked for several filters at once (it gets ``Completion/subscribed(_:)``).
        var multiple: Bool
        /// `nil` for subscriptions restored by the client itself.
        var waiter: Waiter?
    }

    struct PendingUnsubscribe: Sendable {
        var filter: String
        var waiter: Waiter
    }

    private(set) var phase: Phase = .idle
    /// The last reported state; `nil` before the first `connect()`.
    private(set) var state: MQTTConnectionState?
    // Internal setters: the publish events live in ClientStateMachine+Publishes.swift.
    var offlineQueued = 0
    let offlineQueueLimit: Int
    /// QoS 0 messages queued in libmosquitto and not yet written (or reserved by a caller about to queue one).
    var unwrittenQoS0 = 0
    let qos0QueueLimit: Int
    /// QoS 0 publishes waiting for `unwrittenQoS0` to drop below `qos0QueueLimit`, first come first served.
    var roomWaiters: [Waiter] = []
    private var backoff: ReconnectBackoff
    private var timerGeneration = 0
    /// Counts socket closures: an operation admitted in an older epoch may have lost its packet with the socket.
    private(set) var epoch = 0
    /// Why the broker refused the CONNECT now being closed (the socket close follows the CONNACK).
    private var refusal: MQTTClientError?
    // Internal, not private: the subscription events live in ClientStateMachine+Subscriptions.swift.
    /// Confirmed subscriptions, in the order they were made (restored in this order).
    var subscriptions: [TopicSubscription] = []
    private var connectWaiters: [Waiter] = []
    private var disconnectWaiters: [Waiter] = []
    var publishes: [Int32: PendingPublish] = [:]
    var subscribes: [Int32: PendingSubscribe] = [:]
    var unsubscribes: [Int32: PendingUnsubscribe] = [:]
    /// Acknowledgements that arrived before the caller registered the message id (the network thread can be faster
    /// than the thread that called libmosquitto).
    var earlyPublishAcks: [Int32: Completion] = [:]
    var earlySubAcks: [Int32: [Int32]] = [:]
    var earlyUnsubAcks: Set<Int32> = []
    /// The CONNACK of the current (or last) connection.
    private(set) var connAck: MQTTConnAckInfo?

    init(reconnect: ReconnectPolicy, offlineQueueLimit: Int, qos0QueueLimit: Int = 1000, seed: UInt64) {
        self.backoff = ReconnectBackoff(policy: reconnect, seed: seed)
        self.offlineQueueLimit = offlineQueueLimit
        self.qos0QueueLimit = max(qos0QueueLimit, 1)
    }

    /// Number of operations waiting for an acknowledgement (for tests and diagnostics).
    var pendingCount: Int { publishes.count + subscribes.count + unsubscribes.count }

    // MARK: Connection

    /// The user called `connect()`.
    mutating func connectRequested(_ waiter: Waiter) -> [Action] {
        switch phase {
        case .connected:
            return [.resume(waiter, .done)]
        case .connecting, .waitingToReconnect:
            connectWaiters.append(waiter)
            return []
        case .disconnecting:
            return [.resume(waiter, .failed(.notConnected))]
        case .idle, .disconnected, .closed:
            connectWaiters.append(waiter)
            phase = .connecting(initial: true)
            refusal = nil
            return [emit(.connecting), .startConnect]
        }
    }

    /// Opening the connection failed before CONNECT could be sent (TCP refused, DNS, TLS handshake …).
    mutating func connectAttemptFailed(_ error: MQTTClientError) -> [Action] {
        guard case .connecting = phase else { return [] }
        return connectionFailed(.connectFailed(error))
    }

    /// CONNACK arrived: `code` 0 is success, anything else a refusal (the socket close follows).
    mutating func connackReceived(
        code: Int32, sessionPresent: Bool, protocolVersion: MQTTClientProtocolVersion, connAck: MQTTConnAckInfo? = nil
    ) -> [Action] {
        switch phase {
        case .connecting:
            guard code == 0 else {
                refusal = Self.refusalError(code: code, protocolVersion: protocolVersion)
                return []
            }
            phase = .connected
            self.connAck = connAck ?? MQTTConnAckInfo(sessionPresent: sessionPresent)
            backoff.reset()
            var actions = [emit(.connected(sessionPresent: sessionPresent))]
            actions += connectWaiters.map { .resume($0, .done) }
            connectWaiters = []
            if !sessionPresent && !subscriptions.isEmpty {
                actions.append(.resubscribe(subscriptions))
            }
            return actions
        case .disconnecting, .closed:
            // disconnect() raced with the connection attempt: finish the job.
            return code == 0 ? [.sendDisconnect] : []
        case .idle, .connected, .waitingToReconnect, .disconnected:
            return []
        }
    }

    /// The socket closed; `cleanly` when it was our own DISCONNECT, `error` describes any other cause.
    mutating func connectionClosed(cleanly: Bool, error: MQTTClientError) -> [Action] {
        epoch += 1
        switch phase {
        case .disconnecting:
            return finishClose()
        case .connecting:
            return connectionFailed(.connectFailed(refusal ?? error))
        case .connected:
            var actions = failPending(includingQueuedPublishes: false, with: .notConnected)
            actions += connectionFailed(.connectionLost(cleanly ? .notConnected : error))
            return actions
        case .idle, .waitingToReconnect, .disconnected, .closed:
            return []
        }
    }

    /// The network thread found the socket of epoch `openedInEpoch` closed after reading or writing. Usually
    /// `on_disconnect` reported that close already and the epoch has moved on: then this late duplicate is ignored,
    /// so that it cannot fail a connection attempt the user has started since (`disconnect()` returns on the first
    /// report, and `connect()` may follow at once on another thread).
    mutating func socketFoundClosed(openedInEpoch: Int, cleanly: Bool, error: MQTTClientError) -> [Action] {
        guard openedInEpoch == epoch else { return [] }
        return connectionClosed(cleanly: cleanly, error: error)
    }

    /// The reconnect timer of `generation` expired.
    mutating func reconnectTimerFired(generation: Int) -> [Action] {
        guard case .waitingToReconnect(let current) = phase, current == generation else { return [] }
        phase = .connecting(initial: false)
        refusal = nil
        return [emit(.connecting), .startConnect]
    }

    /// The user called `disconnect()`.
    mutating func disconnectRequested(_ waiter: Waiter) -> [Action] {
        switch phase {
        case .connected, .connecting:
            phase = .disconnecting
            disconnectWaiters.append(waiter)
            return [.sendDisconnect]
        case .disconnecting:
            disconnectWaiters.append(waiter)
            return []
        case .idle, .waitingToReconnect, .disconnected, .closed:
            disconnectWaiters.append(waiter)
            return finishClose()
        }
    }

    /// DISCONNECT could not be sent because there was no socket: the client is closed already.
    mutating func disconnectFoundNoConnection() -> [Action] {
        guard phase == .disconnecting else { return [] }
        return finishClose()
    }

    // MARK: Helpers

    private mutating func emit(_ newState: MQTTConnectionState) -> Action {
        state = newState
        return .emitState(newState)
    }

    /// A connection attempt failed or an established connection broke: reconnect or give up.
    private mutating func connectionFailed(_ reason: MQTTDisconnectReason) -> [Action] {
        let initial = phase == .connecting(initial: true)
        var actions = [emit(.disconnected(reason: reason))]
        if !initial, let (attempt, delay) = backoff.next() {
            timerGeneration += 1
            phase = .waitingToReconnect(generation: timerGeneration)
            actions.append(emit(.reconnecting(attempt: attempt, delay: delay)))
            actions.append(.scheduleReconnect(delay: delay, generation: timerGeneration))
            return actions
        }
        phase = .disconnected
        let error: MQTTClientError
        switch reason {
        case .connectFailed(let cause), .connectionLost(let cause): error = cause
        }
        actions += connectWaiters.map { .resume($0, .failed(error)) }
        connectWaiters = []
        actions += failPending(includingQueuedPublishes: true, with: .notConnected)
        return actions
    }

    private mutating func finishClose() -> [Action] {
        phase = .closed
        epoch += 1
        var actions: [Action] = state == .closed ? [] : [emit(.closed)]
        actions += disconnectWaiters.map { .resume($0, .done) }
        disconnectWaiters = []
        actions += connectWaiters.map { .resume($0, .failed(.notConnected)) }
        connectWaiters = []
        actions += failPending(includingQueuedPublishes: true, with: .notConnected)
        return actions
    }

    /// Fails subscribe/unsubscribe waiters and QoS 0 publishes (their packets die with the socket); QoS 1/2 publishes
    /// too when `includingQueuedPublishes` (no reconnect will deliver them).
    private mutating func failPending(includingQueuedPublishes: Bool, with error: MQTTClientError) -> [Action] {
        var actions = failRoomWaiters(with: error)  // first, so that no place freed below goes to them
        for (mid, pending) in publishes where includingQueuedPublishes || pending.qos == .atMostOnce {
            publishes[mid] = nil
            if pending.countsOffline { offlineQueued -= 1 }
            if pending.qos == .atMostOnce { actions += releaseRoom() }
            if let waiter = pending.waiter { actions.append(.resume(waiter, .failed(error))) }
        }
        for pending in subscribes.values {
            if let waiter = pending.waiter { actions.append(.resume(waiter, .failed(error))) }
        }
        for pending in unsubscribes.values {
            actions.append(.resume(pending.waiter, .failed(error)))
        }
        subscribes = [:]
        unsubscribes = [:]
        earlySubAcks = [:]
        earlyUnsubAcks = []
        return actions
    }

    /// Maps a refusing CONNACK code (MQTT 3 return code or MQTT 5 reason code) to an error.
    static func refusalError(code: Int32, protocolVersion: MQTTClientProtocolVersion) -> MQTTClientError {
        switch (protocolVersion, code) {
        case (.v3_1, 1), (.v3_1_1, 1), (.v5, 0x84): return .unacceptableProtocolVersion
        case (.v3_1, 2), (.v3_1_1, 2), (.v5, 0x85): return .identifierRejected
        case (.v3_1, 3), (.v3_1_1, 3), (.v5, 0x88), (.v5, 0x89): return .serverUnavailable
        case (.v3_1, 4), (.v3_1_1, 4), (.v5, 0x86): return .badUsernameOrPassword
        case (.v3_1, 5), (.v3_1_1, 5), (.v5, 0x87): return .notAuthorized
        case (.v5, 0x80...0xFF): return .reasonCode(MQTTReasonCode(rawValue: UInt8(code)), reasonString: nil)
        default: return .protocolError("CONNACK refused with code \(code)")
        }
    }
}
