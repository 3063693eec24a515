import MQTTCore
import NIOCore

/// The protocol logic of one bridge, as a value type returning actions (``BridgeConnection`` carries them out), so
/// the unit tests drive it without sockets or sleeps.
///
/// A bridge is two MQTT client connections spliced together, as mosquitto's bridge is a client context whose socket
/// happens to be outbound:
/// - the *local* side is an ordinary persistent MQTT 5 session on this broker (client id `local_clientid`),
///   subscribed to the `out` topics with No Local. The broker's own sessions therefore queue, persist and resend
///   its messages while the remote is away: while the remote is down the local side is disconnected, and its
///   offline session keeps the queue (on disk with `persistence true`);
/// - the *remote* side is our client connection to the remote broker, subscribed to the `in` topics.
///
/// PUBLISH and acknowledgements cross with their packet identifier unchanged: the local session numbers the
/// messages it has in flight to the bridge, which are exactly those in flight to the remote, and the remote numbers
/// those in flight to us. No table maps identifiers, and a resent message keeps its identifier across reconnects of
/// either side, so QoS 2 stays exactly-once when both sessions persist.
struct BridgeStateMachine {
    /// What the I/O layer is asked to do, in order.
    enum Action: Equatable {
        /// Open a TCP (or TLS) connection to `address`; answer with ``remoteConnected(now:)`` or ``remoteClosed(now:)``.
        case connectRemote(BridgeConfiguration.Address)
        /// Send a packet to the remote (CONNECT with `try_private`'s protocol level when configured).
        case sendRemote(MQTTPacket)
        /// Close the remote connection; ``remoteClosed(now:)`` follows.
        case closeRemote
        /// Attach a new local connection to the broker; the packets for it follow as ``sendLocal(_:)``.
        case openLocal
        /// Hand a packet to the local connection, as if a client had sent it.
        case sendLocal(MQTTPacket)
        /// End the local connection (its persistent session stays, offline).
        case closeLocal
        /// Call ``tick(now:)`` at this time (replaces any earlier request).
        case scheduleTick(NIODeadline)
        /// Publish the connection state (notifications) and count it in `$SYS`.
        case stateChanged(connected: Bool)
    }

    enum RemoteState: Equatable {
        case waiting(until: NIODeadline)
        case connecting(since: NIODeadline)
        case awaitingConnAck(since: NIODeadline)
        case up
    }

    enum LocalState: Equatable {
        case closed
        case awaitingConnAck
        case subscribing
        case up
    }

    let configuration: BridgeConfiguration
    let localClientID: String
    let remoteClientID: String
    let notificationTopic: String
    private(set) var remote: RemoteState
    private(set) var local: LocalState = .closed
    private var backoff: BridgeBackoff
    private var addressIndex = 0
    /// Remote packets that arrived before the local side was up (a persistent remote session sends its queue right
    /// after CONNACK); handed over when it is.
    private(set) var pendingForLocal: [MQTTPacket] = []
    /// QoS 2 messages from the local side no topic line maps (acknowledged locally, so their PUBREL is answered
    /// here too).
    private var locallyCompleted: Set<UInt16> = []
    private var lastRemoteReceive: NIODeadline
    private var lastRemoteSend: NIODeadline
    /// Addresses (indices) that refused try_private's protocol level, or the notification will, and what the last
    /// CONNECT used.
    private(set) var plainConnectAddresses: Set<Int> = []
    private(set) var noWillAddresses: Set<Int> = []
    private var sentPrivateConnect = false
    private var sentWill = false
    /// The remote's Receive Maximum (MQTT 5), passed to the local session so it never has more in flight.
    private var remoteReceiveMaximum: UInt16?
    /// Messages forwarded to the remote / from the remote, for `$SYS`.
    private(set) var messagesSent: UInt64 = 0
    private(set) var messagesReceived: UInt64 = 0

    init(configuration: BridgeConfiguration, hostName: String, now: NIODeadline, seed: UInt64) {
        self.configuration = configuration
        self.localClientID = configuration.resolvedLocalClientID(hostName: hostName)
        self.remoteClientID = configuration.resolvedRemoteClientID(hostName: hostName)
        self.notificationTopic = configuration.resolvedNotificationTopic(hostName: hostName)
        self.backoff = BridgeBackoff(configuration.restartTimeout, seed: seed)
        self.remote = .waiting(until: now)
        self.lastRemoteReceive = now
        self.lastRemoteSend = now
    }

    var isConnected: Bool { remote == .up }
    private var keepalive: TimeAmount { .seconds(Int64(configuration.keepaliveSeconds)) }

    /// Starts the bridge: the local session (so that messages queue from now on) and the first remote attempt.
    mutating func start(now: NIODeadline) -> [Action] {
        var actions: [Action] = [.stateChanged(connected: false)]
        actions += openLocal()
        actions += connectRemote(now: now)
        return actions
    }

    // MARK: Remote events

    mutating func remoteConnected(now: NIODeadline) -> [Action] {
        guard case .connecting = remote else { return [] }
        remote = .awaitingConnAck(since: now)
        lastRemoteReceive = now
        lastRemoteSend = now
        let connect = remoteConnect()
        sentPrivateConnect = connect.isBridge
        sentWill = connect.will != nil
        return [.sendRemote(.connect(connect)), .scheduleTick(now + keepalive)]
    }

    /// The remote connection ended (refused, lost, closed by us); reconnects after the backoff.
    mutating func remoteClosed(now: NIODeadline) -> [Action] {
        if case .waiting = remote { return [] }
        var actions: [Action] = []
        if remote == .up { actions.append(.stateChanged(connected: false)) }
        pendingForLocal = []
        // The local side goes offline with the remote, so its session queues; one still subscribing at startup
        // finishes first (see ``localPacket(_:now:)``).
        if local == .up {
            local = .closed
            actions.append(.closeLocal)
        }
        let delay = backoff.next()
        addressIndex = (addressIndex + 1) % max(configuration.addresses.count, 1)
        remote = .waiting(until: now + delay)
        actions.append(.scheduleTick(now + delay))
        return actions
    }

    mutating func remotePacket(_ packet: MQTTPacket, now: NIODeadline) -> [Action] {
        lastRemoteReceive = now
        switch (remote, packet) {
        case (.awaitingConnAck, .connack(let connack)):
            guard connack.reasonCode == .success else {
                connectRefused(protocolVersion: connack.reasonCode == .unsupportedProtocolVersion)
                return [.closeRemote]
            }
            remote = .up
            backoff.reset()
            remoteReceiveMaximum = connack.properties.receiveMaximum
            var actions: [Action] = [.stateChanged(connected: true)]
            if notifiesRemote, !noWillAddresses.contains(addressIndex) {
                // QoS 0: a packet id of our own could collide with the local session's, which cross unchanged.
                let state = PublishPacket(topic: notificationTopic, payload: ByteBuffer(string: "1"), retain: true)
                actions.append(send(.publish(state), now: now))
            }
            let inbound = configuration.topics.filter(\.isInbound)
            if !inbound.isEmpty {
                let version5 = configuration.protocolVersion == .v5
                let subscriptions = inbound.map {
                    SubscribePacket.Subscription(
                        topicFilter: $0.remoteFilter, qos: $0.qos, noLocal: version5, retainAsPublished: version5)
                }
                actions.append(send(.subscribe(SubscribePacket(packetID: 1, subscriptions: subscriptions)), now: now))
            }
            // A fresh local connection resends what the session has in flight, which a previous one may have
            // handed to us while no remote was there to take it.
            if local != .closed { actions.append(.closeLocal) }
            local = .closed
            actions += openLocal()
            return actions
        case (.up, .publish(var publish)):
            messagesReceived += 1
            if let mapped = configuration.topics.lazy.filter(\.isInbound).compactMap({
                $0.localTopic(forRemote: publish.topic)
            }).first {
                publish.topic = mapped
            }
            publish.properties = Self.forwardable(publish.properties)
            return toLocal(.publish(publish))
        case (.up, .puback), (.up, .pubrec), (.up, .pubrel), (.up, .pubcomp):
            return toLocal(packet)
        case (.up, .suback), (.up, .unsuback), (.up, .pingresp):
            return []
        default:
            // DISCONNECT, a second CONNACK, or a packet a server never sends: only this bridge connection ends.
            return [.closeRemote]
        }
    }

    /// The remote sent bytes that do not decode: only this connection ends. A CONNACK that does not decode is a
    /// refusal in a form the broker got wrong (ejabberd answers a 3.1.1 CONNECT whose will it refuses with return
    /// code 0x80).
    mutating func remoteMalformed() -> [Action] {
        if case .awaitingConnAck = remote { connectRefused(protocolVersion: false) }
        return [.closeRemote]
    }

    /// Brokers that do not know bridges refuse what mosquitto's bridges add to a plain CONNECT: level 0x84 (as an
    /// unknown protocol version; ejabberd does) or a will on `$SYS` (ejabberd again). The address then gets CONNECTs
    /// without it from the next attempt on, one extra at a time: no loop prevention, or no remote notification.
    private mutating func connectRefused(protocolVersion: Bool) {
        if protocolVersion, sentPrivateConnect {
            plainConnectAddresses.insert(addressIndex)
        } else if sentWill {
            noWillAddresses.insert(addressIndex)
        }
    }

    // MARK: Local events

    mutating func localPacket(_ packet: MQTTPacket, now: NIODeadline) -> [Action] {
        switch (local, packet) {
        case (.awaitingConnAck, .connack(let connack)):
            guard connack.reasonCode == .success else { return localFailed() }
            let outbound = configuration.topics.filter(\.isOutbound)
            guard !outbound.isEmpty else { return localReady() }
            local = .subscribing
            // Resubscribed at every reconnect; retained messages only for a new subscription, or every reconnect
            // would send the remote all of them again.
            let subscriptions = outbound.map {
                SubscribePacket.Subscription(
                    topicFilter: $0.localFilter, qos: $0.qos, noLocal: true, retainAsPublished: true,
                    retainHandling: .sendOnNewSubscription)
            }
            return [.sendLocal(.subscribe(SubscribePacket(packetID: 1, subscriptions: subscriptions)))]
        case (.subscribing, .suback):
            return localReady()
        case (.subscribing, _):
            // A resumed session sends what it has in flight and queued right after its CONNACK, before our SUBACK.
            local = .up
            defer { local = .subscribing }
            return localPacket(packet, now: now)
        case (.up, .publish(var publish)):
            guard remote == .up else { return [] }  // still in flight locally: resent when the remote is back
            guard let mapped = configuration.topics.lazy.filter(\.isOutbound).compactMap({
                $0.remoteTopic(forLocal: publish.topic)
            }).first else {
                return acknowledgeLocally(publish)
            }
            messagesSent += 1
            publish.topic = mapped
            publish.properties = configuration.protocolVersion == .v5 ? Self.forwardable(publish.properties) : .none
            return [send(.publish(publish), now: now)]
        case (.up, .pubrel(let pubrel)) where locallyCompleted.contains(pubrel.packetID):
            locallyCompleted.remove(pubrel.packetID)
            return [.sendLocal(.pubcomp(PubCompPacket(packetID: pubrel.packetID)))]
        case (.up, .puback), (.up, .pubrec), (.up, .pubrel), (.up, .pubcomp):
            guard remote == .up else { return [] }  // the remote resends, and the local session answers again
            return [send(packet, now: now)]
        default:
            return []  // PINGRESP, SUBACK of a resubscription, or the DISCONNECT of a closing local connection
        }
    }

    /// The broker ended the local connection (not on our request): restart the bridge from the remote side.
    mutating func localClosed(now: NIODeadline) -> [Action] {
        guard local != .closed else { return [] }
        return localFailed()
    }

    // MARK: Time

    mutating func tick(now: NIODeadline) -> [Action] {
        switch remote {
        case .waiting(let until):
            guard now >= until else { return [.scheduleTick(until)] }
            return connectRemote(now: now)
        case .connecting(let since), .awaitingConnAck(let since):
            // A connection or CONNACK that takes a keepalive interval is given up.
            guard now < since + keepalive else { return [.closeRemote] }
            return [.scheduleTick(since + keepalive)]
        case .up:
            // A remote silent for 1.5 keepalive intervals (no PINGRESP) is gone (MQTT 3.1.1 section 3.1.2.10).
            let deadline = lastRemoteReceive + keepalive + .nanoseconds(keepalive.nanoseconds / 2)
            guard now < deadline else { return [.closeRemote] }
            var actions: [Action] = []
            if now >= lastRemoteSend + keepalive {
                actions.append(send(.pingreq(PingReqPacket()), now: now))
                // The local side has a keepalive too (max_keepalive, MQTT 5 Server Keep Alive); an idle bridge
                // keeps it alive at the same pace.
                if local == .up { actions.append(.sendLocal(.pingreq(PingReqPacket()))) }
            }
            actions.append(.scheduleTick(min(deadline, lastRemoteSend + keepalive)))
            return actions
        }
    }

    // MARK: Helpers

    private mutating func connectRemote(now: NIODeadline) -> [Action] {
        // The parser requires an address; a configuration built in code without one never connects.
        guard !configuration.addresses.isEmpty else { return [] }
        remote = .connecting(since: now)
        let address = configuration.addresses[addressIndex % configuration.addresses.count]
        return [.connectRemote(address), .scheduleTick(now + keepalive)]
    }

    private mutating func openLocal() -> [Action] {
        local = .awaitingConnAck
        var properties: [MQTTProperty] = [.sessionExpiryInterval(UInt32.max)]  // the session never expires
        if let remoteReceiveMaximum { properties.append(.receiveMaximum(remoteReceiveMaximum)) }
        let connect = ConnectPacket(
            protocolVersion: .v5, cleanSession: false, keepAliveSeconds: 0, clientIdentifier: localClientID,
            username: configuration.localUsername, properties: MQTTProperties(properties))
        return [.openLocal, .sendLocal(.connect(connect))]
    }

    private mutating func localReady() -> [Action] {
        guard remote == .up else {
            // Subscribed at startup with no remote yet: go offline so the session queues until it is back.
            local = .closed
            return [.closeLocal]
        }
        local = .up
        let pending = pendingForLocal
        pendingForLocal = []
        return pending.map { .sendLocal($0) }
    }

    private mutating func localFailed() -> [Action] {
        local = .closed
        pendingForLocal = []
        switch remote {
        case .up, .connecting, .awaitingConnAck: return [.closeLocal, .closeRemote]
        case .waiting: return [.closeLocal]
        }
    }

    private mutating func toLocal(_ packet: MQTTPacket) -> [Action] {
        guard local == .up else {
            pendingForLocal.append(packet)
            return []
        }
        return [.sendLocal(packet)]
    }

    private mutating func send(_ packet: MQTTPacket, now: NIODeadline) -> Action {
        lastRemoteSend = now
        return .sendRemote(packet)
    }

    /// A message no `out` line maps (a subscription left from an earlier configuration): completed on the local
    /// side only, so it does not hold the session's window forever.
    private mutating func acknowledgeLocally(_ publish: PublishPacket) -> [Action] {
        guard let id = publish.packetID else { return [] }
        switch publish.qos {
        case .atMostOnce: return []
        case .atLeastOnce: return [.sendLocal(.puback(PubAckPacket(packetID: id)))]
        case .exactlyOnce:
            locallyCompleted.insert(id)
            return [.sendLocal(.pubrec(PubRecPacket(packetID: id)))]
        }
    }

    /// mosquitto's `notifications` without `notifications_local_only`: the state is on the remote too.
    private var notifiesRemote: Bool { configuration.notifications && !configuration.notificationsLocalOnly }

    private func remoteConnect() -> ConnectPacket {
        var properties = MQTTProperties.none
        if configuration.protocolVersion == .v5, !configuration.cleanSession {
            properties = MQTTProperties([.sessionExpiryInterval(UInt32.max)])  // a persistent session, as 3.1.1's
        }
        var connect = ConnectPacket(
            protocolVersion: configuration.protocolVersion, cleanSession: configuration.cleanSession,
            keepAliveSeconds: configuration.keepaliveSeconds, clientIdentifier: remoteClientID,
            username: configuration.remoteUsername, password: configuration.remotePassword.map { Array($0.utf8) },
            properties: properties)
        if notifiesRemote, !noWillAddresses.contains(addressIndex) {  // the remote publishes our "0" when it loses us
            connect.will = ConnectPacket.Will(
                topic: notificationTopic, payload: ByteBuffer(string: "0"), qos: .atLeastOnce, retain: true)
        }
        // try_private: protocol level 0x84, so a broker that knows bridges does not echo our messages back. Not
        // on MQTT 5, where No Local does that and mosquitto refuses 0x85 as a protocol error.
        connect.isBridge =
            configuration.tryPrivate && configuration.protocolVersion != .v5
            && !plainConnectAddresses.contains(addressIndex)
        return connect
    }

    /// Properties that describe the message and may cross: a topic alias belongs to one connection only.
    static func forwardable(_ properties: MQTTProperties) -> MQTTProperties {
        guard !properties.isEmpty else { return properties }
        return MQTTProperties(properties.entries.filter {
            switch $0 {
            case .topicAlias, .subscriptionIdentifier: return false
            default: return true
            }
        })
    }
}
