import MQTTCore
import NIOCore

/// What a route knows about the message beyond the message itself, for MQTT 5 deliveries.
struct Version5Route {
    /// The RETAIN flag the message was published with (Retain As Published forwards it).
    var publishedRetained: Bool
    /// The connection it came from, if any (back-pressure holds it).
    var publisher: BrokerConnectionHandler?
    /// The session that published it (No Local compares sessions): the publisher's, or a will's owner.
    var publishingSession: BrokerSession?
}

/// MQTT 5 in the core (MQTT 5.0 3.3.4, 3.8.3.1, 3.1.2.5, 3.1.3.2.2): deliveries shaped by subscription options
/// and the subscriber's Maximum Packet Size, session expiry, and wills published after their delay.
extension BrokerCore {
    /// Delivers `message` to an MQTT 5 session: No Local, Retain As Published and Subscription Identifiers from
    /// the session's matching subscriptions, and nothing bigger than the client accepts.
    func deliverVersion5(
        _ message: BrokerMessage, grantedQoS: QoS, to session: BrokerSession, _ context: Version5Route,
        recorder: inout RouteRecorder?, sharedQoS0: inout PublishEncoding.Encoded?
    ) {
        var match = SubscriptionMatch(grantedQoS: grantedQoS, retainAsPublished: false, identifiers: [])
        if !session.subscriptionOptions.isEmpty {
            let ownMessage = context.publishingSession === session
            guard let resolved = SubscriptionMatch.resolve(
                topic: message.topic, subscriptions: session.subscriptions, options: session.subscriptionOptions,
                publishedBySameSession: ownMessage)
            else { return }
            match = resolved
        }
        deliver(message, match: match, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0)
    }

    /// Offers `message` to `session` as `match` says (QoS, RETAIN, identifiers) and writes it if it goes out now:
    /// the per-session step of MQTT 5 routing and of shared subscriptions.
    ///
    /// Several matching subscriptions with identifiers get one copy each, as mosquitto sends them (MQTT 5.0 3.3.4
    /// allows one copy with every identifier, or one per subscription): libmosquitto 2.0 refuses a PUBLISH that
    /// carries the Subscription Identifier property twice as a duplicate property.
    func deliver(
        _ message: BrokerMessage, match: SubscriptionMatch, to session: BrokerSession, _ context: Version5Route,
        recorder: inout RouteRecorder?, sharedQoS0: inout PublishEncoding.Encoded?
    ) {
        guard match.identifiers.count > 1 else {
            deliverCopy(message, match: match, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0)
            return
        }
        for identifier in match.identifiers {
            var single = match
            single.identifiers = [identifier]
            deliverCopy(message, match: single, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0)
        }
    }

    /// `sharedQoS0` is the route's MQTT 5 encoding of a property-free QoS 0 copy: every such copy is
    /// byte-identical, so it is encoded once and its buffers shared, as for 3.1.1 subscribers.
    private func deliverCopy(
        _ message: BrokerMessage, match: SubscriptionMatch, to session: BrokerSession, _ context: Version5Route,
        recorder: inout RouteRecorder?, sharedQoS0: inout PublishEncoding.Encoded?
    ) {
        guard !match.identifiers.isEmpty else {  // the message as routed: no copy (and its reference counting)
            offer(message, match: match, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0)
            return
        }
        var copy = message
        for identifier in match.identifiers {
            copy.properties.entries.append(.subscriptionIdentifier(identifier))
        }
        offer(copy, match: match, to: session, context, recorder: &recorder, sharedQoS0: &sharedQoS0)
    }

    private func offer(
        _ message: BrokerMessage, match: SubscriptionMatch, to session: BrokerSession, _ context: Version5Route,
        recorder: inout RouteRecorder?, sharedQoS0: inout PublishEncoding.Encoded?
    ) {
        let qos = min(message.qos, match.grantedQoS)
        guard session.maximumPacketSize == nil || fits(message, qos: qos, in: session) else { return }
        let retain = match.retainAsPublished && context.publishedRetained
        switch session.outbound.enqueue(message, qos: qos, retain: retain) {
        case .send(let delivery):
            if recorder?.handles(delivery, for: session) == true { return }
            guard let connection = session.connection else { return }
            if delivery.qos == .atMostOnce, !delivery.retain, connection.protocolVersion == .v5,
                connection.takesFastVersion5Path(delivery)
            {
                let encoded = sharedQoS0 ?? PublishEncoding.encode(delivery, allocator: allocator, version5: true)
                sharedQoS0 = encoded
                connection.writeEncodedPublish(encoded)
            } else {
                connection.writePublish(delivery)
            }
        case .queued:
            recorder?.queued(qos, for: session)
            backpressure.holdBack(context.publisher, for: session, qos: qos, core: self)
        case .discarded:
            return
        case .dropped:
            statistics.noteDropped(session, logger: logger)
            backpressure.holdBack(context.publisher, for: session, qos: qos, core: self)
        case .droppedSlowConsumer:
            statistics.noteDroppedSlowConsumer(session, logger: logger)
        }
    }

    /// Whether `message` at `qos` fits the client's Maximum Packet Size; one that does not is never sent to it
    /// (MQTT-3.1.2-25) and counts as dropped.
    func fits(_ message: BrokerMessage, qos: QoS, in session: BrokerSession) -> Bool {
        guard let maximum = session.maximumPacketSize else { return true }
        var properties = message.properties
        if message.expiresAt != nil { properties.entries.append(.messageExpiryInterval(0)) }
        let packet = PublishPacket(
            topic: message.topic, payload: message.payload, qos: qos, packetID: qos == .atMostOnce ? nil : 1,
            properties: properties)
        guard let size = try? packet.wireSize(protocolVersion: .v5), size <= maximum else {
            statistics.publishDropped += 1
            return false
        }
        return true
    }

    /// The will of a connection that ended without DISCONNECT, as the message it becomes: its MQTT 5 properties
    /// travel with it, less the Will Delay Interval (MQTT 5.0 3.1.3.2).
    func willMessage(_ will: ConnectPacket.Will) -> BrokerMessage {
        var message = BrokerMessage(
            topic: will.topic, payload: will.payload, qos: min(will.qos, configuration.maxQoS),
            retain: will.retain && configuration.retainAvailable)
        for entry in will.properties.entries {
            switch entry {
            case .willDelayInterval: continue
            case .messageExpiryInterval(let seconds): message.expiresAt = now + .seconds(Int64(seconds))
            default: message.properties.entries.append(entry)
            }
        }
        return message
    }

    /// Publishes `will` now, or after its Will Delay Interval when the session outlives the connection: a client
    /// that comes back in time has not gone away, and no will is sent (MQTT-3.1.3-9).
    func publishWill(_ will: ConnectPacket.Will, of session: BrokerSession) {
        let message = willMessage(will)
        let delay = will.properties.willDelayInterval ?? 0
        guard delay > 0, !session.cleanSession, sessions.session(forKey: session.key) === session else {
            route(message, fromSession: session)
            return
        }
        scheduleDelayedWill(message, of: session, at: now + .seconds(Int64(delay)))
    }

    /// Holds `message`, the will of `session`, until `deadline`; persistence records it with the session, so a
    /// restart in between still publishes it (``BrokerStateSnapshot``).
    func scheduleDelayedWill(_ message: BrokerMessage, of session: BrokerSession, at deadline: NIODeadline) {
        session.delayedWill?.task.cancel()
        let task = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            guard let delayed = session.delayedWill else { return }
            session.delayedWill = nil
            self.storage.delayedWillCleared(session)
            self.route(delayed.message, fromSession: session)
            self.flushDirty()
        }
        session.delayedWill = DelayedWill(task: task, message: message, publishAt: deadline)
        storage.delayedWillScheduled(session, will: message, publishAt: deadline)
    }

    /// A client attached to its stored session: the session no longer expires, and a will still waiting for its
    /// delay is not sent.
    func sessionResumed(_ session: BrokerSession) {
        session.expiryTask?.cancel()
        session.expiryTask = nil
        if let delayed = session.delayedWill {
            delayed.task.cancel()
            session.delayedWill = nil
            storage.delayedWillCleared(session)
        }
    }

    /// The session's connection ended and the session outlives it: it ends after its MQTT 5 Session Expiry
    /// Interval, publishing a will still waiting for its delay first (MQTT-3.1.3-9). 3.1.1 sessions never expire.
    func scheduleExpiry(of session: BrokerSession) {
        guard session.expiryInterval != .max, session.expiryInterval > 0 else { return }
        session.expiryTask?.cancel()
        session.expiryTask = eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(session.expiryInterval))) {
            [self] in
            session.expiryTask = nil
            guard session.connection == nil, self.sessions.session(forKey: session.key) === session else { return }
            if let delayed = session.delayedWill {
                delayed.task.cancel()
                session.delayedWill = nil
                self.storage.delayedWillCleared(session)
                self.route(delayed.message, fromSession: session)
            }
            self.logger.debug("session expired", metadata: ["client": "\(session.clientID)"])
            self.removeSession(session)
            self.flushDirty()
        }
    }
}
