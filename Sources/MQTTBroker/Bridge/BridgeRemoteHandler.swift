import NIOCore
import NIOSSL

/// The remote side's pipeline end, on a SwiftNIO loop: relays what the remote sends, and its closing, to the
/// bridge on the core's loop (the core's loop may be the broker's own epoll loop, where SwiftNIO's
/// `ClientBootstrap` cannot run). One `execute` per read, in order, as ``ConnectionRelay`` does for clients.
final class BridgeRemoteHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let bridge: NIOLoopBound<BridgeConnection>
    private let generation: UInt64

    init(bridge: NIOLoopBound<BridgeConnection>, generation: UInt64) {
        self.bridge = bridge
        self.generation = generation
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        let bridge = self.bridge
        let generation = self.generation
        bridge.eventLoop.execute { bridge.value.remoteReceived(bytes, generation: generation) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let bridge = self.bridge
        let generation = self.generation
        bridge.eventLoop.execute { bridge.value.remoteEnded(generation: generation, error: nil) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let bridge = self.bridge
        let generation = self.generation
        let description = "\(error)"
        bridge.eventLoop.execute { bridge.value.remoteEnded(generation: generation, error: description) }
        context.close(promise: nil)
    }
}

/// TLS towards the remote (`bridge_cafile`, `bridge_certfile`, `bridge_keyfile`, `bridge_insecure`).
enum BridgeTLS {
    static func makeContext(_ tls: BridgeConfiguration.TLS) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(tls.caFile)
        if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
            configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
            // Loaded here, as the listeners load theirs: NIOSSL's `.file` source refuses some PEM keys (EC PKCS#8).
            configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        }
        // mosquitto's bridge_insecure: the chain is verified, the host name is not.
        configuration.certificateVerification = tls.insecure ? .noHostnameVerification : .fullVerification
        return try NIOSSLContext(configuration: configuration)
    }

    /// The name to check the certificate against and send as SNI; none for an IP address (SNI forbids them).
    static func serverHostname(_ host: String) -> String? {
        let isIPv4 = host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
        return isIPv4 || host.contains(":") ? nil : host
    }
}
