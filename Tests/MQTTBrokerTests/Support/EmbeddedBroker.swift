import Logging
import MQTTCore
import NIOCore
import NIOEmbedded

@testable import MQTTBroker

/// A broker core on an `EmbeddedEventLoop` with real connection handlers on `EmbeddedChannel`s: exercises the
/// handler, the core and the state machines together, with virtual time instead of sleeping.
final class EmbeddedBroker {
    let loop = EmbeddedEventLoop()
    let core: BrokerCore

    init(_ configure: (inout BrokerConfiguration) -> Void = { _ in }) {
        var configuration = BrokerConfiguration()
        configuration.sysInterval = nil
        configure(&configuration)
        core = BrokerCore(configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), eventLoop: loop)
    }

    /// Opens a new client connection (socket accepted, nothing sent yet).
    func accept() throws -> EmbeddedClient {
        let channel = EmbeddedChannel(handler: BrokerConnectionHandler(core: core), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).wait()
        return EmbeddedClient(channel: channel)
    }

    /// Accepts a connection and completes CONNECT; returns the client and its CONNACK.
    func connect(_ connect: ConnectPacket) throws -> (EmbeddedClient, ConnAckPacket?) {
        let client = try accept()
        try client.send(.connect(connect))
        var packets = try client.received()
        guard case .connack(let connack) = packets.first else {
            return (client, nil)
        }
        packets.removeFirst()
        client.backlog = packets
        return (client, connack)
    }

    /// Moves virtual time forward, firing due timers.
    func advance(by amount: TimeAmount) {
        loop.advanceTime(by: amount)
    }
}

/// The test side of one embedded connection: encodes packets into the handler and decodes what it wrote.
final class EmbeddedClient {
    let channel: EmbeddedChannel
    private var decoder = MQTTPacketDecoder()
    private var pending = ByteBuffer()
    /// Packets decoded but not yet returned by ``received()``.
    var backlog: [MQTTPacket] = []

    init(channel: EmbeddedChannel) {
        self.channel = channel
    }

    func send(_ packet: MQTTPacket) throws {
        var buffer = ByteBuffer()
        try MQTTPacketEncoder.encode(packet, into: &buffer)
        try channel.writeInbound(buffer)
    }

    func sendRaw(_ bytes: [UInt8]) throws {
        try channel.writeInbound(ByteBuffer(bytes: bytes))
    }

    /// Everything the broker wrote (and flushed) to this client since the last call.
    func received() throws -> [MQTTPacket] {
        // A read batch flushes what it wrote; writes made outside a read leave at the end of the loop tick
        // (BrokerCore.markDirty): finish the tick.
        channel.embeddedEventLoop.run()
        return try flushedBeforeEndOfTick()
    }

    /// What the broker flushed to this client so far without finishing the loop tick: the output of read batches,
    /// not what waits for the end of the tick (acknowledgements, timers).
    func flushedBeforeEndOfTick() throws -> [MQTTPacket] {
        while var chunk = try channel.readOutbound(as: ByteBuffer.self) {
            pending.writeBuffer(&chunk)
        }
        var packets = backlog
        backlog = []
        while let packet = try decoder.decode(from: &pending) {
            packets.append(packet)
        }
        return packets
    }

    /// The PUBLISH packets among ``received()``.
    func receivedPublishes() throws -> [PublishPacket] {
        try received().compactMap {
            if case .publish(let publish) = $0 { return publish }
            return nil
        }
    }

    var isActive: Bool { channel.isActive }

    /// Closes the socket from the client side without DISCONNECT.
    func dropConnection() {
        try? channel.close().wait()
    }
}
