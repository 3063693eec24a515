// The latency floor of an MQTT forwarder on SwiftNIO, to compare the broker's latency with (docs/benchmarks.md,
// Known gaps: Latency).
//
// One event loop and one channel per connection, like the broker, and nothing else: CONNECT is accepted,
// SUBSCRIBE registers exact topic filters, a PUBLISH is forwarded byte for byte to the subscribers of its topic and
// then acknowledged, PUBACKs from subscribers are ignored, PINGREQ is answered. No sessions, windows, queues,
// packet identifiers of its own, wildcards or checks: enough for `mqttchat bench --scenario pairs` at QoS 0 or 1,
// not an MQTT broker. A malformed length closes the connection.
//
// Options switch on, one by one, the broker's three ways of writing, to measure what each costs on this floor:
//   --coalesce     deliveries are queued and flushed when the publisher's read completes (one write per batch)
//   --defer-acks   acknowledgements are flushed by a task at the end of the loop tick, after the deliveries
//   --watermark    every socket is unwritable from its first queued byte (the broker's write-completion signal)
//
// Usage: NIORelayFloor [--coalesce] [--defer-acks] [--watermark] [port]   (0 or none: a free port).
// Prints "listening on 127.0.0.1:PORT".

import MQTTCore
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

struct RelayOptions: Sendable {
    var coalesce = false
    var deferAcknowledgements = false
    var watermark = false
    var port = 0

    init(arguments: ArraySlice<String>) {
        for argument in arguments {
            switch argument {
            case "--coalesce": coalesce = true
            case "--defer-acks": deferAcknowledgements = true
            case "--watermark": watermark = true
            default: port = Int(argument) ?? port
            }
        }
    }
}

/// Subscribers by exact topic, and the channels waiting for a flush. Touched only on the server's one event loop,
/// which every connection shares.
final class Router: @unchecked Sendable {
    let options: RelayOptions
    var subscribers: [String: [any Channel]] = [:]
    var deliveriesToFlush: [any Channel] = []
    var acknowledgementsToFlush: [any Channel] = []
    var endOfTickFlushScheduled = false

    init(options: RelayOptions) {
        self.options = options
    }
}

/// One whole packet cut from the stream: its first byte, its body, and all of its bytes.
struct FramedPacket {
    var firstByte: UInt8
    var body: ByteBuffer
    var bytes: ByteBuffer
}

enum Framing {
    case packet(FramedPacket)
    case needMoreBytes
    case malformedLength
}

final class RelayHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let router: Router
    private var cumulation: ByteBuffer?

    init(router: Router) {
        self.router = router
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if var pending = cumulation {
            pending.writeBuffer(&buffer)
            buffer = pending
            cumulation = nil
        }
        while true {
            switch Self.frame(&buffer) {
            case .packet(let packet):
                handle(packet, context: context)
            case .needMoreBytes:
                if buffer.readableBytes > 0 { cumulation = buffer }
                return
            case .malformedLength:
                context.close(promise: nil)
                return
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        for channel in router.deliveriesToFlush { channel.flush() }
        router.deliveriesToFlush.removeAll(keepingCapacity: true)
        guard router.options.deferAcknowledgements else {
            context.flush()
            return
        }
        router.acknowledgementsToFlush.append(context.channel)
        guard !router.endOfTickFlushScheduled else { return }
        router.endOfTickFlushScheduled = true
        let router = self.router
        context.eventLoop.assumeIsolated().execute {
            router.endOfTickFlushScheduled = false
            for channel in router.acknowledgementsToFlush { channel.flush() }
            router.acknowledgementsToFlush.removeAll(keepingCapacity: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        for (topic, channels) in router.subscribers {
            router.subscribers[topic] = channels.filter { $0 !== context.channel }
        }
        context.fireChannelInactive()
    }

    /// Cuts the next packet from `buffer` (first byte, remaining length, body).
    static func frame(_ buffer: inout ByteBuffer) -> Framing {
        let start = buffer.readerIndex
        guard buffer.readableBytes > 0 else { return .needMoreBytes }
        let length: (value: Int, byteCount: Int)?
        do {
            length = try buffer.getMQTTVariableByteInteger(at: start + 1)
        } catch {
            return .malformedLength
        }
        guard let (bodyLength, lengthByteCount) = length,
              let firstByte: UInt8 = buffer.getInteger(at: start),
              let body = buffer.getSlice(at: start + 1 + lengthByteCount, length: bodyLength),
              let bytes = buffer.readSlice(length: 1 + lengthByteCount + bodyLength)
        else { return .needMoreBytes }
        return .packet(FramedPacket(firstByte: firstByte, body: body, bytes: bytes))
    }

    private func handle(_ packet: FramedPacket, context: ChannelHandlerContext) {
        var body = packet.body
        switch packet.firstByte >> 4 {
        case 1:  // CONNECT
            reply([0x20, 0x02, 0x00, 0x00], context: context)
        case 8:  // SUBSCRIBE: every filter granted at the QoS asked for
            guard let packetID: UInt16 = body.readInteger() else { return }
            var granted: [UInt8] = []
            while let length: UInt16 = body.readInteger(), let filter = body.readString(length: Int(length)),
                  let qos: UInt8 = body.readInteger() {
                router.subscribers[filter, default: []].append(context.channel)
                granted.append(qos)
            }
            reply([0x90, UInt8(2 + granted.count), UInt8(packetID >> 8), UInt8(packetID & 0xFF)] + granted,
                  context: context)
        case 3:  // PUBLISH: forwarded as it came, then acknowledged at QoS 1 and 2
            guard let length: UInt16 = body.readInteger(), let topic = body.readString(length: Int(length)) else {
                return
            }
            for subscriber in router.subscribers[topic] ?? [] {
                if router.options.coalesce {
                    subscriber.write(packet.bytes, promise: nil)
                    router.deliveriesToFlush.append(subscriber)
                } else {
                    subscriber.writeAndFlush(packet.bytes, promise: nil)
                }
            }
            let qos = (packet.firstByte >> 1) & 0x03
            if qos > 0, let packetID: UInt16 = body.readInteger() {
                reply([qos == 1 ? 0x40 : 0x50, 0x02, UInt8(packetID >> 8), UInt8(packetID & 0xFF)], context: context)
            }
        case 12:  // PINGREQ
            reply([0xD0, 0x00], context: context)
        case 14:  // DISCONNECT
            context.close(promise: nil)
        default:
            break  // PUBACK, PUBREC and the rest: ignored
        }
    }

    private func reply(_ bytes: [UInt8], context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }
}

let options = RelayOptions(arguments: CommandLine.arguments.dropFirst())
let router = Router(options: options)
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelOption(
        .writeBufferWaterMark,
        value: options.watermark ? .init(low: 1, high: 1) : .init(low: 32 * 1024, high: 64 * 1024))
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RelayHandler(router: router))
        }
    }
do {
    let server = try await bootstrap.bind(host: "127.0.0.1", port: options.port).get()
    print("listening on 127.0.0.1:\(server.localAddress?.port ?? options.port)")
    try await server.closeFuture.get()
} catch {
    print("NIORelayFloor: \(error)")
    exit(1)
}
