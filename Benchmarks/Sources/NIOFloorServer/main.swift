// The memory floor of one idle connection on SwiftNIO, for `Benchmarks/scripts/bench-broker.sh`'s idle run.
//
// A TCP server with nothing but NIO's own per-socket objects and one stateless handler shared by every connection,
// which answers each read with a CONNACK so that `mqttchat bench --scenario idle` can open its connections. It
// keeps no MQTT state, and receives into a fixed 64-byte buffer (NIO's smallest inline allocator), so its resident
// memory per connection is what any broker built on one NIO channel per connection pays before its own state.
//
// Usage: NIOFloorServer [port]   (0 or none: a free port). Prints "listening on 127.0.0.1:PORT".

import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Answers every read with CONNACK (session not present, accepted); shared by all connections.
final class ConnAckResponder: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let connack: [UInt8] = [0x20, 0x02, 0x00, 0x00]

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let reply = context.channel.allocator.buffer(bytes: Self.connack)
        context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
    }
}

let requestedPort = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 0
let responder = ConnAckResponder()
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let bootstrap = ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64))
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(responder) }
    }
do {
    let server = try await bootstrap.bind(host: "127.0.0.1", port: requestedPort).get()
    print("listening on 127.0.0.1:\(server.localAddress?.port ?? requestedPort)")
    try await server.closeFuture.get()
} catch {
    print("NIOFloorServer: \(error)")
    exit(1)
}
