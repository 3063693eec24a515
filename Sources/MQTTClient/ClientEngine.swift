import CMosquitto
import Foundation
import MQTTCore

/// The continuation a caller waits on; every operation completes with a ``Completion``.
typealias Waiter = CheckedContinuation<Completion, Never>

/// Ties libmosquitto, the network thread and the state machine together.
///
/// Threads: caller tasks call `mosquitto_publish` / `mosquitto_subscribe` / `mosquitto_unsubscribe` directly; one
/// network thread (ours, not `mosquitto_loop_start`, so libmosquitto never reconnects on its own) runs connect,
/// the socket's I/O (``SocketPoller``) and our reconnect timer. libmosquitto callbacks run on that thread and only copy their data into
/// the lock-protected state machine or yield it into stream continuations; they never block. The one library call
/// made from a callback is restoring subscriptions in `on_connect` (`mosquitto_subscribe` only queues a packet and
/// never waits); connect and disconnect are queued for the network thread (``LoopControl/Command``).
/// We never hold our own locks while calling libmosquitto, so its internal mutexes cannot deadlock with ours.
final class ClientEngine: Sendable {
    let configuration: MQTTClientConfiguration
    // Internal, not private: the callbacks (ClientEngine+Callbacks.swift) and request/response
    // (ClientEngine+Requests.swift) use them too.
    let handle: MosquittoHandle
    private let loop = LoopControl()
    /// Waits for the socket with `poll(2)`; other threads wake it when they queue packets or commands.
    let poller: SocketPoller
    let core: Locked<Core>
    let listeners = Locked(Listeners())
    /// MQTT 5 requests waiting for their responses.
    let requests: Locked<RequestTracker<RequestWaiter>>

    /// The state machine plus the state streams, locked together so states are emitted in order.
    struct Core {
        var machine: ClientStateMachine<Waiter>
        var stateStreams: [UInt64: AsyncStream<MQTTConnectionState>.Continuation] = [:]
        var nextStreamID: UInt64 = 0
        /// Completions the network thread's callbacks produced, resumed in batches (``resumeDeferred(onlyIfDue:)``).
        var deferred = DeferredWakeUps<Waiter>()
    }

    struct Listeners {
        var streams: [UInt64: (filter: String?, continuation: AsyncStream<MQTTMessage>.Continuation)] = [:]
        var nextID: UInt64 = 0
    }

    init(configuration: MQTTClientConfiguration) throws(MQTTClientError) {
        guard !configuration.clientID.isEmpty || configuration.protocolVersion == .v5 else {
            throw .invalidConfiguration("clientID must not be empty before MQTT 5")
        }
        guard !configuration.clientID.isEmpty || configuration.cleanSession else {
            throw .invalidConfiguration("an empty clientID needs cleanSession (the broker assigns a new one each time)")
        }
        guard configuration.maxOutstandingRequests >= 1 else {
            throw .invalidConfiguration("maxOutstandingRequests must be at least 1")
        }
        guard (1...65535).contains(configuration.port) else {
            throw .invalidConfiguration("port \(configuration.port) is out of range")
        }
        let keepAlive = configuration.keepAlive.components.seconds
        guard (5...65535).contains(keepAlive) else {
            throw .invalidConfiguration("keepAlive must be 5...65535 seconds (libmosquitto's limits)")
        }
        guard configuration.offlineQueueLimit >= 0, configuration.maxInflightMessages >= 0 else {
            throw .invalidConfiguration("offlineQueueLimit and maxInflightMessages must not be negative")
        }
        guard configuration.qos0QueueLimit >= 1 else {
            throw .invalidConfiguration("qos0QueueLimit must be at least 1")
        }
        guard configuration.receiveMaximum >= 1 else {  // MQTT 5.0 3.1.2.11.3: 0 is a protocol error
            throw .invalidConfiguration("receiveMaximum must be at least 1")
        }
        self.configuration = configuration
        requests = Locked(RequestTracker(limit: configuration.maxOutstandingRequests))
        poller = try SocketPoller()
        handle = try MosquittoHandle(clientID: configuration.clientID, cleanSession: configuration.cleanSession)
        do {
            try handle.apply(configuration)
        } catch {
            handle.destroy()
            throw error
        }
        core = Locked(
            Core(
                machine: ClientStateMachine(
                    reconnect: configuration.reconnect, offlineQueueLimit: configuration.offlineQueueLimit,
                    qos0QueueLimit: configuration.qos0QueueLimit,
                    seed: UInt64.random(in: 0...UInt64.max))))
        installCallbacks()
        let thread = Thread { [self] in runNetworkThread() }
        thread.name = "mqtt-\(configuration.clientID)"
        thread.start()
    }

    /// Tells the network thread to stop (it destroys the handle on its way out, within about 100 ms) and ends every
    /// stream. Called from `MQTTClient.deinit`; never blocks, because deinit may run on a cooperative thread.
    func shutdown() {
        loop.send(.stop)
        poller.wake()
        let stateStreams = core.withLock { core in
            let streams = core.stateStreams
            core.stateStreams = [:]
            return streams
        }
        stateStreams.values.forEach { $0.finish() }
        let messageStreams = listeners.withLock { listeners in
            let streams = listeners.streams
            listeners.streams = [:]
            return streams
        }
        messageStreams.values.forEach { $0.continuation.finish() }
        let waiting = requests.withLock { $0.failAll() }
        for waiter in waiting { waiter.resume(returning: .failure(.notConnected)) }
    }

    var currentState: MQTTConnectionState? {
        core.withLock { $0.machine.state }
    }

    var connAck: MQTTConnAckInfo? {
        core.withLock { $0.machine.connAck }
    }

    var isV5: Bool { configuration.protocolVersion == .v5 }

    // MARK: Operations

    func connect() async throws(MQTTClientError) {
        let completion = await withCheckedContinuation { (waiter: Waiter) in
            feed { $0.connectRequested(waiter) }
        }
        if case .failed(let error) = completion { throw error }
    }

    func disconnect() async {
        _ = await withCheckedContinuation { (waiter: Waiter) in
            feed { $0.disconnectRequested(waiter) }
        }
    }

    func subscribe(_ filter: String, qos: QoS, options: MQTTSubscribeOptions) async throws(MQTTClientError) -> QoS {
        guard mosquitto_sub_topic_check2(filter, filter.utf8.count) == MosquittoError.success else {
            throw .invalidTopic(filter)
        }
        guard isV5 || options.isDefault else { throw .mqtt5Required("subscribe options") }
        let propertyList = try PropertyList(subscribe: options)
        let completion = await withCheckedContinuation { (waiter: Waiter) in
            switch core.withLock({ $0.machine.admitSubscription() }) {
            case .failure(let error):
                waiter.resume(returning: .failed(error))
            case .success(let epoch):
                var mid: Int32 = 0
                let rc = mosquitto_subscribe_v5(
                    handle.pointer, &mid, filter, Int32(qos.rawValue), options.optionBits, propertyList.pointer)
                poller.wake()
                guard rc == MosquittoError.success else {
                    waiter.resume(returning: .failed(MosquittoError.operationError(rc)))
                    return
                }
                let subscription = TopicSubscription(filter: filter, qos: qos, options: options)
                feed { $0.subscribeSent(mid: mid, subscription: subscription, epoch: epoch, waiter: waiter) }
            }
        }
        switch completion {
        case .granted(let granted): return granted
        case .done, .subscribed: return qos
        case .failed(let error): throw error
        }
    }

    func unsubscribe(_ filter: String) async throws(MQTTClientError) {
        guard mosquitto_sub_topic_check2(filter, filter.utf8.count) == MosquittoError.success else {
            throw .invalidTopic(filter)
        }
        let completion = await withCheckedContinuation { (waiter: Waiter) in
            switch core.withLock({ $0.machine.admitSubscription() }) {
            case .failure(let error):
                waiter.resume(returning: .failed(error))
            case .success(let epoch):
                var mid: Int32 = 0
                let rc = mosquitto_unsubscribe(handle.pointer, &mid, filter)
                poller.wake()
                guard rc == MosquittoError.success else {
                    waiter.resume(returning: .failed(MosquittoError.operationError(rc)))
                    return
                }
                feed { $0.unsubscribeSent(mid: mid, filter: filter, epoch: epoch, waiter: waiter) }
            }
        }
        if case .failed(let error) = completion { throw error }
    }

    // MARK: Streams

    func messageStream(filter: String?) -> AsyncStream<MQTTMessage> {
        let (stream, continuation) = AsyncStream<MQTTMessage>.makeStream()
        let id = listeners.withLock { listeners in
            let id = listeners.nextID
            listeners.nextID += 1
            listeners.streams[id] = (filter, continuation)
            return id
        }
        continuation.onTermination = { [listeners] _ in
            _ = listeners.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func stateStream() -> AsyncStream<MQTTConnectionState> {
        let (stream, continuation) = AsyncStream<MQTTConnectionState>.makeStream()
        let id = core.withLock { core in
            let id = core.nextStreamID
            core.nextStreamID += 1
            core.stateStreams[id] = continuation
            if let state = core.machine.state { continuation.yield(state) }
            return id
        }
        continuation.onTermination = { [core] _ in
            _ = core.withLock { $0.stateStreams.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: State machine plumbing

    /// Runs one state machine event; emits states under the lock (so they stay ordered), everything else after.
    ///
    /// With `deferringResumes` (libmosquitto's callbacks, on the network thread) completions are resumed later, in
    /// a batch (``DeferredWakeUps``).
    func feed(
        deferringResumes: Bool = false,
        _ event: (inout ClientStateMachine<Waiter>) -> [ClientStateMachine<Waiter>.Action]
    ) {
        let actions = core.withLock { core in
            let actions = event(&core.machine)
            for action in actions {
                switch action {
                case .emitState(let state):
                    for continuation in core.stateStreams.values { continuation.yield(state) }
                case .resume(let waiter, let completion) where deferringResumes:
                    core.deferred.append(.resume(waiter, completion), now: .now)
                default:
                    break
                }
            }
            return actions
        }
        for action in actions {
            switch action {
            case .emitState:
                break  // already emitted above
            case .resume(let waiter, let completion):
                if !deferringResumes { waiter.resume(returning: completion) }
            case .startConnect:
                loop.send(.connect)
            case .scheduleReconnect(let delay, let generation):
                loop.schedule(after: delay, generation: generation)
            case .sendDisconnect:
                loop.send(.disconnect)
                poller.wake()  // the network thread may be waiting on the socket
            case .resubscribe(let subscriptions):
                // Comes from on_connect, on the network thread. libmosquitto re-sends its queued QoS 1/2 messages
                // right after on_connect returns, so subscribing here (queue-only calls that never wait) puts the
                // SUBSCRIBEs on the wire before those messages and the client receives its own offline publishes.
                restore(subscriptions)
            }
        }
    }

    /// Resumes the callers and feeds the streams the callbacks deferred (see ``DeferredWakeUps``): all of it, or
    /// with `onlyIfDue` only a batch that is due. Returns whether any remain deferred.
    @discardableResult
    private func resumeDeferred(onlyIfDue: Bool = false) -> Bool {
        let (entries, remaining) = core.withLock { core in
            let due = core.deferred.takeIfDue(idle: !onlyIfDue, now: .now)
            return (due, !core.deferred.isEmpty)
        }
        for entry in entries { entry.perform() }
        return remaining
    }

    // MARK: Network thread

    private func runNetworkThread() {
        var socketOpen = false
        var openedEpoch = 0  // the state machine's epoch when the socket opened
        while true {
            // While the socket keeps the thread busy, completions wait for its next idle moment (the poller calls
            // back before it blocks) or until the batch is due.
            let waiting = resumeDeferred(onlyIfDue: socketOpen)
            switch loop.next(wait: !socketOpen) {
            case nil:
                break
            case .stop:
                // Dropping the socket without DISCONNECT: the broker publishes the will, as for a crash.
                handle.destroy()
                resumeDeferred()
                return
            case .connect:
                socketOpen = openConnection()
                if socketOpen { openedEpoch = core.withLock { $0.machine.epoch } }
            case .disconnect:
                if mosquitto_disconnect(handle.pointer) != MosquittoError.success {
                    socketOpen = false
                    feed { $0.disconnectFoundNoConnection() }
                }
            case .reconnectTimerFired(let generation):
                feed { $0.reconnectTimerFired(generation: generation) }
            }
            if socketOpen {
                let rc = poller.runOnce(
                    handle.pointer, timeoutMilliseconds: 100, beforeBlocking: waiting ? { self.resumeDeferred() } : nil)
                socketOpen = mosquitto_socket(handle.pointer) >= 0
                if !socketOpen {
                    // Usually on_disconnect reported this already (then the event is ignored), but libmosquitto
                    // closes a socket whose TLS handshake failed inside its read or write without calling it.
                    let error = MosquittoError.lossError(rc)
                    let epoch = openedEpoch
                    feed { $0.socketFoundClosed(openedInEpoch: epoch, cleanly: rc == MosquittoError.success, error: error) }
                }
            }
        }
    }

    /// Blocking connect on the network thread; the CONNACK arrives later through `on_connect`.
    private func openConnection() -> Bool {
        let keepAlive = Int32(configuration.keepAlive.components.seconds)
        var properties = PropertyList()
        if isV5, let expiry = configuration.sessionExpiryInterval {
            // Cannot fail: a fixed-size property with a valid identifier.
            try? properties.add(MQTT_PROP_SESSION_EXPIRY_INTERVAL, int32: expiry)
        }
        let rc = mosquitto_connect_bind_v5(
            handle.pointer, configuration.host, Int32(configuration.port), keepAlive, nil, properties.pointer)
        let savedErrno = errno
        guard rc == MosquittoError.success else {
            let error = MosquittoError.connectError(code: rc, errno: savedErrno, host: configuration.host)
            feed { $0.connectAttemptFailed(error) }
            return false
        }
        return true
    }

    private func restore(_ subscriptions: [TopicSubscription]) {
        let epoch = core.withLock { $0.machine.epoch }
        for subscription in subscriptions {
            var mid: Int32 = 0
            // The options were accepted when the subscription was first made, so building them again cannot fail.
            guard let properties = try? PropertyList(subscribe: subscription.options) else { continue }
            let rc = mosquitto_subscribe_v5(
                handle.pointer, &mid, subscription.filter, Int32(subscription.qos.rawValue),
                subscription.options.optionBits, properties.pointer)
            if rc == MosquittoError.success {
                feed { $0.subscribeSent(mid: mid, subscription: subscription, epoch: epoch, waiter: nil) }
            }
        }
    }
}
