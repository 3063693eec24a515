import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// What a TLS listener adds in front of every accepted connection: the TLS context built once for the listener,
/// and whether the client certificate's CN becomes the user name.
struct TLSListenerContext: Sendable {
    let sslContext: NIOSSLContext
    let usesIdentityAsUsername: Bool

    /// The contexts for `listeners`, index for index (nil for plain listeners). Builds them on the NIO thread pool,
    /// since loading certificates is blocking file I/O that must not run on an event loop.
    static func make(for listeners: [BrokerConfiguration.Listener]) async throws -> [TLSListenerContext?] {
        guard listeners.contains(where: { $0.tls != nil }) else { return listeners.map { _ in nil } }
        return try await NIOThreadPool.singleton.runIfActive {
            try listeners.map { listener throws(BrokerTLSError) -> TLSListenerContext? in
                guard let tls = listener.tls else { return nil }
                return TLSListenerContext(
                    sslContext: try TLSServerContext.make(tls),
                    usesIdentityAsUsername: tls.useIdentityAsUsername)
            }
        }
    }

    /// Puts the TLS handler and its ``TLSConnectionObserver`` at the front of a new connection's pipeline; the MQTT
    /// handler goes behind them. Call on the channel's event loop.
    func addHandlers(to channel: any Channel, logger: Logger) throws {
        let operations = channel.pipeline.syncOperations
        try operations.addHandler(NIOSSLServerHandler(context: sslContext))
        try operations.addHandler(TLSConnectionObserver(logger: logger, reportsIdentity: usesIdentityAsUsername))
    }
}
