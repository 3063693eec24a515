import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("Bridge state machine")
struct BridgeStateMachineTests {
    typealias Action = BridgeStateMachine.Action
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func configuration(version: MQTTProtocolVersion = .v3_1_1) -> BridgeConfiguration {
        var configuration = BridgeConfiguration(name: "b")
        configuration.addresses = [.init(host: "a", port: 1), .init(host: "b", port: 2)]
        configuration.topics = [
            BridgeTopic(pattern: "up/#", direction: .out, qos: .atLeastOnce, localPrefix: "l/", remotePrefix: "r/"),
            BridgeTopic(pattern: "down/#", direction: .in, qos: .exactlyOnce, localPrefix: "l/", remotePrefix: "r/"),
        ]
        configuration.protocolVersion = version
        configuration.keepaliveSeconds = 10
        configuration.restartTimeout = .constant(seconds: 3)
        return configuration
    }

    func machine(version: MQTTProtocolVersion = .v3_1_1) -> BridgeStateMachine {
        BridgeStateMachine(configuration: configuration(version: version), hostName: "h", now: start, seed: 1)
    }

    func publish(_ topic: String, id: UInt16?, qos: QoS = .atLeastOnce) -> MQTTPacket {
        .publish(PublishPacket(topic: topic, payload: ByteBuffer(string: "p"), qos: qos, packetID: id))
    }

    static let connackOK = MQTTPacket.connack(ConnAckPacket(returnCode: .accepted))
    static let subackOK = MQTTPacket.suback(SubAckPacket(packetID: 1, returnCodes: [.granted(.atLeastOnce)]))

    /// Brings the machine to both sides up.
    func connected(version: MQTTProtocolVersion = .v3_1_1) -> BridgeStateMachine {
        var machine = machine(version: version)
        _ = machine.start(now: start)
        _ = machine.localPacket(Self.connackOK, now: start)
        _ = machine.localPacket(Self.subackOK, now: start)  // no remote yet: the local side goes offline
        _ = machine.remoteConnected(now: start)
        _ = machine.remotePacket(Self.connackOK, now: start)
        _ = machine.localPacket(Self.connackOK, now: start)
        _ = machine.localPacket(Self.subackOK, now: start)
        return machine
    }

    @Test("start opens a persistent MQTT 5 local session and connects to the first address")
    func starts() throws {
        var machine = machine()
        let actions = machine.start(now: start)
        #expect(actions.first == .stateChanged(connected: false))
        #expect(actions.contains(.openLocal))
        #expect(actions.contains(.connectRemote(.init(host: "a", port: 1))))
        let connect = try #require(actions.compactMap { if case .sendLocal(.connect(let c)) = $0 { c } else { nil } }.first)
        #expect(connect.protocolVersion == .v5 && !connect.cleanSession && connect.clientIdentifier == "local.h.b")
        #expect(connect.properties.sessionExpiryInterval == UInt32.max)
        // Local CONNACK: subscribe to the out topics with No Local, keeping RETAIN.
        let subscribe = machine.localPacket(Self.connackOK, now: start)
        guard case .sendLocal(.subscribe(let packet))? = subscribe.first else {
            Issue.record("no SUBSCRIBE: \(subscribe)")
            return
        }
        #expect(
            packet.subscriptions == [
                .init(
                    topicFilter: "l/up/#", qos: .atLeastOnce, noLocal: true, retainAsPublished: true,
                    retainHandling: .sendOnNewSubscription)
            ])
        // Subscribed while the remote is still away: offline, so the session queues.
        #expect(machine.localPacket(Self.subackOK, now: start) == [.closeLocal])
        #expect(machine.local == .closed)
    }

    @Test("remote CONNACK: state 1, subscribe the in topics, reopen the local side")
    func remoteUp() throws {
        var machine = machine()
        _ = machine.start(now: start)
        let connect = machine.remoteConnected(now: start)
        guard case .sendRemote(.connect(let packet))? = connect.first else {
            Issue.record("no CONNECT")
            return
        }
        #expect(packet.clientIdentifier == "h.b" && !packet.cleanSession && packet.keepAliveSeconds == 10)
        let actions = machine.remotePacket(Self.connackOK, now: start)
        #expect(actions.first == .stateChanged(connected: true))
        #expect(actions.contains(.sendRemote(.subscribe(SubscribePacket(
            packetID: 1, subscriptions: [.init(topicFilter: "r/down/#", qos: .exactlyOnce)])))))
        #expect(actions.contains(.closeLocal))  // the one still subscribing from startup
        #expect(actions.contains(.openLocal))
        #expect(machine.isConnected)
    }

    @Test("notifications reach the remote too: a will of 0 and a retained 1, unless notifications_local_only")
    func remoteNotifications() {
        for localOnly in [false, true] {
            var configuration = configuration()
            configuration.notificationsLocalOnly = localOnly
            var machine = BridgeStateMachine(configuration: configuration, hostName: "h", now: start, seed: 1)
            _ = machine.start(now: start)
            guard case .sendRemote(.connect(let connect))? = machine.remoteConnected(now: start).first else {
                Issue.record("no CONNECT")
                return
            }
            #expect((connect.will?.topic == "$SYS/broker/connection/h.b/state") == !localOnly)
            #expect(connect.will.map { String(buffer: $0.payload) == "0" && $0.retain } ?? localOnly)
            let state = PublishPacket(
                topic: "$SYS/broker/connection/h.b/state", payload: ByteBuffer(string: "1"), retain: true)
            #expect(machine.remotePacket(Self.connackOK, now: start).contains(.sendRemote(.publish(state))) == !localOnly)
        }
    }

    @Test("MQTT 5 subscribes on the remote with No Local")
    func version5NoLocal() {
        var machine = machine(version: .v5)
        _ = machine.start(now: start)
        _ = machine.remoteConnected(now: start)
        let actions = machine.remotePacket(Self.connackOK, now: start)
        #expect(actions.contains(.sendRemote(.subscribe(SubscribePacket(
            packetID: 1,
            subscriptions: [.init(topicFilter: "r/down/#", qos: .exactlyOnce, noLocal: true, retainAsPublished: true)])))))
    }

    @Test("messages cross remapped with their packet ids; acknowledgements cross back")
    func forwarding() {
        var machine = connected()
        #expect(machine.localPacket(publish("l/up/x", id: 7), now: start) == [.sendRemote(publish("r/up/x", id: 7))])
        #expect(machine.remotePacket(.puback(PubAckPacket(packetID: 7)), now: start) == [.sendLocal(.puback(PubAckPacket(packetID: 7)))])
        #expect(
            machine.remotePacket(publish("r/down/y", id: 9, qos: .exactlyOnce), now: start)
                == [.sendLocal(publish("l/down/y", id: 9, qos: .exactlyOnce))])
        #expect(machine.localPacket(.pubrec(PubRecPacket(packetID: 9)), now: start) == [.sendRemote(.pubrec(PubRecPacket(packetID: 9)))])
        #expect(machine.remotePacket(.pubrel(PubRelPacket(packetID: 9)), now: start) == [.sendLocal(.pubrel(PubRelPacket(packetID: 9)))])
        #expect(machine.localPacket(.pubcomp(PubCompPacket(packetID: 9)), now: start) == [.sendRemote(.pubcomp(PubCompPacket(packetID: 9)))])
        #expect(machine.messagesSent == 1 && machine.messagesReceived == 1)
    }

    @Test("a resumed local session's messages right after its CONNACK are forwarded before the SUBACK")
    func resumedBeforeSuback() {
        var machine = machine()
        _ = machine.start(now: start)
        _ = machine.remoteConnected(now: start)
        _ = machine.remotePacket(Self.connackOK, now: start)
        _ = machine.localPacket(Self.connackOK, now: start)
        #expect(machine.localPacket(publish("l/up/q", id: 2), now: start) == [.sendRemote(publish("r/up/q", id: 2))])
        #expect(machine.local == .subscribing)
    }

    @Test("remote messages before the local side is up wait for it")
    func pendingUntilLocalUp() {
        var machine = machine()
        _ = machine.start(now: start)
        _ = machine.remoteConnected(now: start)
        _ = machine.remotePacket(Self.connackOK, now: start)
        #expect(machine.remotePacket(publish("r/down/a", id: 1), now: start).isEmpty)
        _ = machine.localPacket(Self.connackOK, now: start)
        #expect(machine.localPacket(Self.subackOK, now: start) == [.sendLocal(publish("l/down/a", id: 1))])
    }

    @Test("remote lost: state 0, local side offline, reconnect after restart_timeout to the next address")
    func reconnects() {
        var machine = connected()
        let later = start + .seconds(1)
        let actions = machine.remoteClosed(now: later)
        #expect(actions == [.stateChanged(connected: false), .closeLocal, .scheduleTick(later + .seconds(3))])
        #expect(machine.tick(now: later + .seconds(1)) == [.scheduleTick(later + .seconds(3))])
        let retry = machine.tick(now: later + .seconds(3))
        #expect(retry.first == .connectRemote(.init(host: "b", port: 2)))
        // A local message arriving meanwhile is left in flight (the session resends it).
        #expect(machine.localPacket(publish("l/up/x", id: 3), now: later).isEmpty)
    }

    @Test("a refused CONNACK or a malformed conversation closes only the remote")
    func refused() {
        var machine = machine()
        _ = machine.start(now: start)
        _ = machine.remoteConnected(now: start)
        #expect(machine.remotePacket(.connack(ConnAckPacket(returnCode: .notAuthorized)), now: start) == [.closeRemote])
        var up = connected()
        #expect(up.remotePacket(.pingreq(PingReqPacket()), now: start) == [.closeRemote])
    }

    @Test("a remote refusing try_private's level 0x84 gets plain 3.1.1 CONNECTs from then on")
    func privateRefused() {
        var configuration = configuration()
        configuration.addresses = [.init(host: "ej", port: 1)]
        var machine = BridgeStateMachine(configuration: configuration, hostName: "h", now: start, seed: 1)
        _ = machine.start(now: start)
        guard case .sendRemote(.connect(let first))? = machine.remoteConnected(now: start).first else { return }
        #expect(first.isBridge)
        let refusal = MQTTPacket.connack(ConnAckPacket(returnCode: .unacceptableProtocolVersion))
        #expect(machine.remotePacket(refusal, now: start) == [.closeRemote])
        _ = machine.remoteClosed(now: start)
        _ = machine.tick(now: start + .seconds(3))
        guard case .sendRemote(.connect(let second))? = machine.remoteConnected(now: start + .seconds(3)).first else {
            Issue.record("no second CONNECT")
            return
        }
        #expect(!second.isBridge)
    }

    @Test("a remote refusing the notification will (or garbling the refusal) gets CONNECTs without it")
    func willRefused() {
        var machine = machine()
        _ = machine.start(now: start)
        guard case .sendRemote(.connect(let first))? = machine.remoteConnected(now: start).first else { return }
        #expect(first.will != nil)
        #expect(machine.remoteMalformed() == [.closeRemote])
        _ = machine.remoteClosed(now: start)
        _ = machine.tick(now: start + .seconds(3))
        _ = machine.tick(now: start + .seconds(3))  // the second address, then the first again
        _ = machine.remoteClosed(now: start + .seconds(3))
        _ = machine.tick(now: start + .seconds(6))
        guard case .sendRemote(.connect(let again))? = machine.remoteConnected(now: start + .seconds(6)).first else {
            Issue.record("no CONNECT")
            return
        }
        #expect(again.will == nil)
        #expect(!machine.remotePacket(Self.connackOK, now: start).contains { if case .sendRemote(.publish) = $0 { true } else { false } })
    }

    @Test("keepalive: PINGREQ after an idle interval, close after 1.5 intervals of silence")
    func keepalive() {
        var machine = connected()
        let ping = machine.tick(now: start + .seconds(10))
        #expect(ping.first == .sendRemote(.pingreq(PingReqPacket())))
        #expect(machine.tick(now: start + .seconds(16)) == [.closeRemote])
    }

    @Test("the broker closing the local side restarts the remote too")
    func localLost() {
        var machine = connected()
        #expect(machine.localClosed(now: start) == [.closeLocal, .closeRemote])
    }

    @Test("an unmapped local message is completed locally")
    func unmapped() {
        var machine = connected()
        #expect(machine.localPacket(publish("other", id: 4), now: start) == [.sendLocal(.puback(PubAckPacket(packetID: 4)))])
        #expect(
            machine.localPacket(publish("other", id: 5, qos: .exactlyOnce), now: start)
                == [.sendLocal(.pubrec(PubRecPacket(packetID: 5)))])
        #expect(machine.localPacket(.pubrel(PubRelPacket(packetID: 5)), now: start) == [.sendLocal(.pubcomp(PubCompPacket(packetID: 5)))])
    }

    @Test("CONNECT levels 0x84 and 0x85 decode as bridges of 3.1.1 and 5; 0x86 is still refused")
    func bridgeLevels() throws {
        var v5 = ConnectPacket(protocolVersion: .v5, clientIdentifier: "x")
        v5.isBridge = true
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(.connect(v5), into: &buffer)
        #expect(buffer.getInteger(at: 8, as: UInt8.self) == 0x85)
        var decoder = MQTTPacketDecoder(acceptsVersion5: true)
        #expect(try decoder.decode(from: &buffer) == .connect(v5))
        var plain = ByteBuffer()
        try MQTTPacketEncoder.encode(.connect(ConnectPacket(clientIdentifier: "x")), into: &plain)
        plain.setInteger(UInt8(0x86), at: 8)
        #expect(throws: MQTTCodecError.unsupportedProtocolLevel(0x86)) { try decoder.decode(from: &plain) }
    }

    @Test("try_private sets the high bit of the CONNECT protocol level, and it decodes back")
    func tryPrivate() throws {
        var connect = ConnectPacket(clientIdentifier: "x")
        connect.isBridge = true
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(.connect(connect), into: &buffer)
        #expect(buffer.getInteger(at: 8, as: UInt8.self) == 0x84)
        var decoder = MQTTPacketDecoder()
        #expect(try decoder.decode(from: &buffer) == .connect(connect))
        var machine = machine()
        _ = machine.start(now: start)
        guard case .sendRemote(.connect(let sent))? = machine.remoteConnected(now: start).first else {
            Issue.record("no CONNECT")
            return
        }
        #expect(sent.isBridge)
    }
}
