import NIOCore
import NIOPosix

/// Gives a connected socket to SwiftNIO on one of the broker's socket loops, with the connection's handler: a new
/// one for a socket just accepted, or the parked connection it belongs to. A socket on the core's loop gets the
/// ``BrokerConnectionHandler`` in its pipeline; a socket on another loop a ``ConnectionRelay``.
struct SocketAdopter: Sendable {
    /// The loops sockets are spread over.
    let socketGroup: any EventLoopGroup
    /// The broker core.
    let core: NIOLoopBound<BrokerCore>

    /// NIO takes `descriptor` (and closes it when the channel closes, or when this fails).
    func adopt(
        _ descriptor: CInt, unparking: NIOLoopBound<BrokerConnectionHandler>?
    ) -> EventLoopFuture<any Channel> {
        let core = self.core
        return ClientBootstrap(group: socketGroup)
            .channelOption(.recvAllocator, value: MQTTBrokerServer.receiveBufferSizing)
            .channelOption(.writeBufferWaterMark, value: MQTTBrokerServer.writabilityMeansNothingQueued)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if channel.eventLoop === core.eventLoop {
                        let handler =
                            unparking?.value ?? BrokerConnectionHandler(core: core.value, socketDescriptor: descriptor)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    } else {
                        try channel.pipeline.syncOperations.addHandler(
                            ConnectionRelay(core: core, socketDescriptor: descriptor, unparking: unparking))
                    }
                }
            }
            .withConnectedSocket(descriptor)
    }
}
