import Logging
import NIOCore
import NIOSSL

/// Sits right behind the `NIOSSLServerHandler` of a TLS listener's connection. It logs a failed handshake at notice
/// level with its reason (a plain-TCP client, an unknown CA, a missing client certificate, a client that hangs up)
/// and, on listeners with `use_identity_as_username`, turns the verified client certificate into a
/// ``TLSClientIdentity`` event for the MQTT connection handler behind it, ahead of the first bytes. Errors still
/// travel on, so the connection handler closes just this connection.
///
/// Decrypted bytes only arrive once the handshake has completed, so the first read marks the handshake as done
/// (the handshake event itself lives in NIOTLS, which this target does not depend on).
final class TLSConnectionObserver: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let logger: Logger
    private let reportsIdentity: Bool
    /// Whether bytes came through (so the handshake completed) or a failure was logged; later errors are the
    /// connection's business.
    private var handshakeSettled = false

    init(logger: Logger, reportsIdentity: Bool) {
        self.logger = logger
        self.reportsIdentity = reportsIdentity
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !handshakeSettled {
            handshakeSettled = true
            if reportsIdentity {
                let certificate = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self).peerCertificate
                context.fireUserInboundEventTriggered(TLSClientIdentity(certificate: certificate))
            }
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !handshakeSettled {
            handshakeSettled = true  // one notice per connection, not one per error that follows
            logger.notice(
                "TLS handshake failed, connection closed",
                metadata: ["remote": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", "reason": "\(error)"])
        }
        context.fireErrorCaught(error)
    }
}
