import NIOCore

/// The connection as a SwiftNIO channel handler, for a socket whose pipeline is on the core's loop
/// (``PipelineChannel``): NIO's events become the connection's transport-neutral ones (`received`,
/// `transportInactive`, `transportFailed`), and each read batch ends with a flush.
extension BrokerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func handlerAdded(context: ChannelHandlerContext) {
        // The descriptor, when known, is the one this channel took (a parked connection's comes back on its own).
        attach(PipelineChannel(context: context, descriptor: socketDescriptor))
        if context.channel.isActive {
            start()
        }
    }

    /// Whether `context` is the pipeline this handler currently writes to: after parking, the old channel's last
    /// events (inactive, removed) belong to a socket the connection no longer uses.
    fileprivate func isCurrent(_ context: ChannelHandlerContext) -> Bool {
        (transport as? PipelineChannel)?.context === context
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        core.flusher.readBatchBegins()
        received(unwrapInboundIn(data))
    }

    /// The socket's read batch is processed: what it wrote (acks to this client, messages to subscribers) leaves
    /// now, before the next socket's batch is read. Flushing per read batch rather than once per loop tick lets
    /// the subscribers read in parallel with the broker's next batch (and a subscriber's output does not pile up
    /// over a whole tick until it drops), and an isolated message does not wait for the rest of the tick. The
    /// end-of-tick flush (``OutputFlusher/markDirty(_:)``) still covers writes made outside a read (timers, relayed
    /// sockets, other connections' closing).
    func channelReadComplete(context: ChannelHandlerContext) {
        core.flusher.readBatchEnds()
        core.flushDirty(deferringAcknowledgements: true)
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        core.flusher.readBatchEnds()
        if isCurrent(context) {
            transportInactive()
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard isCurrent(context) else { return }  // the channel left behind when parking
        self.transport = nil
        signalClosed()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let identity = event as? TLSClientIdentity {
            certificateIdentified(identity)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        core.flusher.readBatchEnds()
        guard isCurrent(context) else { return }
        transportFailed("\(error)")
    }
}
