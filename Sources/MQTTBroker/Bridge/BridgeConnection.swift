import Logging
import MQTTCore
import NIOCore
import NIOPosix
import NIOSSL

/// One running bridge: carries out what its ``BridgeStateMachine`` decides. The local side is a
/// ``BrokerConnectionHandler`` on a ``BridgeLocalTransport``; the remote side a SwiftNIO client channel whose
/// events are relayed to the core's loop (``BridgeRemoteHandler``). Each side has a generation number, so events
/// of a connection the bridge already left behind are ignored.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class BridgeConnection {
    let core: BrokerCore
    private let remoteGroup: any EventLoopGroup
    private let notificationTopic: String
    private let tlsContext: NIOSSLContext?
    @exclusivity(unchecked) private(set) var machine: BridgeStateMachine
    @exclusivity(unchecked) private var local: BrokerConnectionHandler?
    @exclusivity(unchecked) private var localGeneration: UInt64 = 0
    @exclusivity(unchecked) private var remote: (any Channel)?
    @exclusivity(unchecked) private var remoteGeneration: UInt64 = 0
    @exclusivity(unchecked) private var remoteDecoder: MQTTPacketDecoder
    @exclusivity(unchecked) private var remoteInput: ByteBuffer?
    @exclusivity(unchecked) private var remoteOutput: ByteBuffer?
    @exclusivity(unchecked) private var timer: Scheduled<Void>?
    @exclusivity(unchecked) private var stopped = false
    /// Times the remote connection reached CONNACK, for `$SYS`.
    @exclusivity(unchecked) private(set) var connectCount: UInt64 = 0

    var name: String { machine.configuration.name }

    private var logger: Logger {
        var logger = core.logger
        logger[metadataKey: "bridge"] = "\(machine.configuration.name)"
        return logger
    }

    init(
        configuration: BridgeConfiguration, core: BrokerCore, remoteGroup: any EventLoopGroup, hostName: String
    ) throws {
        self.core = core
        self.remoteGroup = remoteGroup
        self.notificationTopic = configuration.resolvedNotificationTopic(hostName: hostName)
        self.tlsContext = try configuration.tls.map(BridgeTLS.makeContext)
        self.machine = BridgeStateMachine(
            configuration: configuration, hostName: hostName, now: core.eventLoop.now,
            seed: UInt64.random(in: 0...UInt64.max))
        self.remoteDecoder = MQTTPacketDecoder(
            maximumPacketSize: core.configuration.maxPacketSize, acceptsVersion5: configuration.protocolVersion == .v5)
        remoteDecoder.protocolVersion = configuration.protocolVersion
    }

    func start() {
        perform(machine.start(now: core.eventLoop.now))
    }

    /// Stops for good (broker shutdown): both sides are closed and no reconnect follows. The local connection is
    /// closed here, with its close signalled at once: the core's shutdown waits for every connection's close, and
    /// no socket will report this one's.
    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
        remoteGeneration += 1
        remote?.close(promise: nil)
        remote = nil
        localGeneration += 1
        if let handler = local {
            local = nil
            handler.close(.serverShutdown)
            handler.relayRemoved()
        }
    }

    // MARK: Events

    func remoteReceived(_ bytes: ByteBuffer, generation: UInt64) {
        guard generation == remoteGeneration, !stopped else { return }
        var bytes = bytes
        if remoteInput == nil {
            remoteInput = bytes
        } else {
            remoteInput?.writeBuffer(&bytes)
        }
        var actions: [BridgeStateMachine.Action] = []
        while var buffer = remoteInput {
            remoteInput = nil
            do {
                guard let packet = try remoteDecoder.decode(from: &buffer) else {
                    remoteInput = buffer
                    break
                }
                if buffer.readableBytes > 0 { remoteInput = buffer }
                if case .connack(let connack) = packet, connack.reasonCode != .success {
                    logger.notice("bridge: the remote refused CONNECT", metadata: ["code": "\(connack.reasonCode)"])
                }
                actions += machine.remotePacket(packet, now: core.eventLoop.now)
            } catch {
                // A malformed packet ends only this bridge connection; the state machine reconnects with backoff.
                logger.warning("bridge: malformed packet from the remote", metadata: ["error": "\(error)"])
                actions += machine.remoteMalformed()
                break
            }
        }
        perform(actions)
    }

    func remoteEnded(generation: UInt64, error: String?) {
        guard generation == remoteGeneration, !stopped else { return }
        if let error { logger.notice("bridge: remote connection failed", metadata: ["error": "\(error)"]) }
        dropRemote()
        perform(machine.remoteClosed(now: core.eventLoop.now))
    }

    private func remoteChannelConnected(_ channel: any Channel, generation: UInt64) {
        guard generation == remoteGeneration, !stopped else {
            channel.close(promise: nil)
            return
        }
        remote = channel
        perform(machine.remoteConnected(now: core.eventLoop.now))
    }

    private func localReceived(_ packet: MQTTPacket?, generation: UInt64) {
        guard generation == localGeneration else { return }
        guard let packet else {
            local?.relayRemoved()  // the broker closed it: no socket will report the close
            local = nil
            perform(machine.localClosed(now: core.eventLoop.now))
            return
        }
        perform(machine.localPacket(packet, now: core.eventLoop.now))
    }

    // MARK: Actions

    private func perform(_ actions: [BridgeStateMachine.Action]) {
        guard !stopped else { return }
        var localPackets: [MQTTPacket] = []
        for action in actions {
            switch action {
            case .connectRemote(let address):
                connectRemote(address)
            case .sendRemote(let packet):
                encodeForRemote(packet)
            case .closeRemote:
                flushRemote()
                remote?.close(promise: nil)  // its channelInactive ends it through remoteEnded
                if remote == nil {  // still connecting: give up the attempt
                    remoteGeneration += 1
                    perform(machine.remoteClosed(now: core.eventLoop.now))
                }
            case .openLocal:
                feedLocal(&localPackets)
                openLocal()
            case .sendLocal(let packet):
                localPackets.append(packet)
            case .closeLocal:
                feedLocal(&localPackets)
                closeLocal()
            case .scheduleTick(let deadline):
                timer?.cancel()
                timer = core.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
                    timer = nil
                    perform(machine.tick(now: core.eventLoop.now))
                }
            case .stateChanged(let connected):
                stateChanged(connected: connected)
            }
        }
        feedLocal(&localPackets)
        flushRemote()
    }

    private func connectRemote(_ address: BridgeConfiguration.Address) {
        remoteGeneration += 1
        let generation = remoteGeneration
        remoteInput = nil
        remoteOutput = nil
        let bound = NIOLoopBound(self, eventLoop: core.eventLoop)
        let tlsContext = self.tlsContext
        let host = address.host
        logger.info("bridge: connecting", metadata: ["address": "\(address.host):\(address.port)"])
        ClientBootstrap(group: remoteGroup)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(Int64(machine.configuration.keepaliveSeconds)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tlsContext {
                        let tls = try NIOSSLClientHandler(
                            context: tlsContext, serverHostname: BridgeTLS.serverHostname(host))
                        try channel.pipeline.syncOperations.addHandler(tls)
                    }
                    try channel.pipeline.syncOperations.addHandler(
                        BridgeRemoteHandler(bridge: bound, generation: generation))
                }
            }
            .connect(host: address.host, port: address.port)
            .whenComplete { result in
                bound.eventLoop.execute {
                    switch result {
                    case .success(let channel):
                        bound.value.remoteChannelConnected(channel, generation: generation)
                    case .failure(let error):
                        bound.value.remoteEnded(generation: generation, error: "\(error)")
                    }
                }
            }
    }

    private func dropRemote() {
        remoteGeneration += 1
        remote = nil
        remoteInput = nil
        remoteOutput = nil
    }

    private func encodeForRemote(_ packet: MQTTPacket) {
        guard remote != nil else { return }
        var buffer = remoteOutput ?? ByteBuffer()
        do {
            try MQTTPacketEncoder.encode(packet, protocolVersion: machine.configuration.protocolVersion, into: &buffer)
        } catch {
            logger.warning("bridge: a packet cannot be encoded for the remote", metadata: ["error": "\(error)"])
            return
        }
        remoteOutput = buffer
    }

    private func flushRemote() {
        guard let buffer = remoteOutput, let remote else { return }
        remoteOutput = nil
        remote.writeAndFlush(buffer, promise: nil)
    }

    private func openLocal() {
        localGeneration += 1
        let generation = localGeneration
        let bound = NIOLoopBound(self, eventLoop: core.eventLoop)
        let transport = BridgeLocalTransport(
            eventLoop: core.eventLoop,
            deliver: { packet in bound.value.localReceived(packet, generation: generation) },
            pauseReading: { paused in bound.value.remote?.setOption(.autoRead, value: !paused).whenFailure { _ in } })
        let handler = BrokerConnectionHandler(core: core)
        handler.transport = transport
        handler.start()
        local = handler
    }

    private func closeLocal() {
        localGeneration += 1
        guard let handler = local else { return }
        local = nil
        handler.close(.connectionLost)
        handler.relayRemoved()
        core.flushDirty()
    }

    /// Hands `packets` to the local connection as one read batch, as a socket's bytes would arrive.
    private func feedLocal(_ packets: inout [MQTTPacket]) {
        guard !packets.isEmpty else { return }
        defer { packets.removeAll() }
        guard let handler = local else { return }
        var buffer = ByteBuffer()
        for packet in packets {
            do {
                try MQTTPacketEncoder.encode(packet, protocolVersion: .v5, into: &buffer)
            } catch {
                logger.warning("bridge: a packet cannot be encoded locally", metadata: ["error": "\(error)"])
            }
        }
        core.flusher.readBatchBegins()
        handler.received(buffer)
        core.flusher.readBatchEnds()
        core.flushDirty()
    }

    private func stateChanged(connected: Bool) {
        if connected {
            connectCount += 1
            logger.info("bridge: connected", metadata: ["remoteClientID": "\(machine.remoteClientID)"])
        } else if connectCount > 0 {
            logger.notice("bridge: disconnected")
        }
        guard machine.configuration.notifications else { return }
        core.route(
            BrokerMessage(
                topic: notificationTopic, payload: ByteBuffer(string: connected ? "1" : "0"), qos: .atLeastOnce,
                retain: true))
        core.flushDirty()
    }
}
