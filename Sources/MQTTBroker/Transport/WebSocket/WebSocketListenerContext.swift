import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// What a `protocol websockets` listener puts in front of every accepted connection, built once per listener when
/// the broker starts.
///
/// The pipeline, behind the TLS handlers of a `wss` listener: NIO's HTTP/1.1 server handlers with its WebSocket
/// upgrader, then ``HTTPListenerHandler`` for requests that are not an upgrade. An upgrade (any request path, as
/// mosquitto accepts any) swaps them for NIO's frame codec, ``WebSocketMQTTHandler`` and the MQTT connection
/// (``BrokerConnectionHandler`` or ``ConnectionRelay``, as on a TLS listener).
///
/// Subprotocols: the client must offer `mqtt` (MQTT 3.1.1 section 6) or `mqttv3.1` (MQTT 3.1 clients), and the
/// answer names the first of those it offered. An upgrade that offers neither, or no `Sec-WebSocket-Protocol` at
/// all, is refused with 400: mosquitto's own WebSocket server (2.1) drops it too, and with libwebsockets (2.0) such a
/// connection lands on the HTTP-only protocol, where MQTT never flows.
struct WebSocketListenerContext: Sendable {
    /// The subprotocols served, in the order they are looked for in the client's offer.
    static let subprotocols = ["mqtt", "mqttv3.1"]
    /// Frames are buffered whole by NIO's decoder, so their size is bounded: at least this, so that ordinary clients
    /// never hit it.
    static let minimumFrameSize = 256 * 1024
    /// And at most this, whatever `max_packet_size` allows; a larger packet must come in several frames (MQTT is a
    /// byte stream, so a packet may span frames).
    static let maximumFrameSize = 16 << 20
    /// Files served from `http_dir` are read whole into memory: larger ones are refused.
    static let maximumFileSize = 16 << 20

    let maxFrameSize: Int
    let files: StaticFileRoot?
    /// How long an HTTP connection may wait between requests (the broker's connect timeout).
    let idleTimeout: TimeAmount

    /// The contexts for the configuration's listeners, index for index (nil for plain MQTT listeners). Resolves each
    /// `http_dir` on the NIO thread pool (`realpath` is blocking file I/O); throws when one is missing.
    static func make(for configuration: BrokerConfiguration) async throws -> [WebSocketListenerContext?] {
        let listeners = configuration.listeners
        guard listeners.contains(where: { $0.transportProtocol == .websockets }) else {
            return listeners.map { _ in nil }
        }
        let frameSize = max(minimumFrameSize, min(configuration.maxPacketSize + 5, maximumFrameSize))
        let idleTimeout = configuration.connectTimeout
        return try await NIOThreadPool.singleton.runIfActive {
            try listeners.map { listener throws(WebSocketListenerError) -> WebSocketListenerContext? in
                guard listener.transportProtocol == .websockets else { return nil }
                var files: StaticFileRoot?
                if let directory = listener.httpDirectory {
                    files = StaticFileRoot(directory: directory, maximumFileSize: maximumFileSize)
                    guard files != nil else { throw .httpDirectoryUnusable(directory) }
                }
                return WebSocketListenerContext(maxFrameSize: frameSize, files: files, idleTimeout: idleTimeout)
            }
        }
    }

    /// Adds the HTTP and upgrade handlers to a new connection's pipeline (after any TLS handlers); once a WebSocket
    /// upgrade is done, `addConnection` adds the MQTT connection behind ``WebSocketMQTTHandler``. Until then the
    /// channel is in `httpChannels`, so that shutdown closes it. Call on the channel's event loop.
    func addHandlers(
        to channel: any Channel, tracking httpChannels: HTTPPhaseChannels,
        addConnection: @escaping @Sendable (any Channel) throws -> Void
    ) throws {
        httpChannels.add(channel)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maxFrameSize,
            automaticErrorHandling: false,  // WebSocketMQTTHandler answers codec errors with the close frame
            shouldUpgrade: { channel, head in
                channel.eventLoop.makeSucceededFuture(Self.upgradeHeaders(for: head))
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let operations = channel.pipeline.syncOperations
                    let http = try operations.handler(type: HTTPListenerHandler.self)
                    let identity = http.clientIdentity
                    _ = operations.removeHandler(http)
                    try operations.addHandler(WebSocketMQTTHandler())
                    try addConnection(channel)
                    httpChannels.remove(channel)  // an MQTT connection now: the core closes it at shutdown
                    // The certificate identity arrived during the HTTP phase; the connection needs it before CONNECT,
                    // and NIO hands on the bytes that came with or after the upgrade request only once this returns.
                    if let identity { channel.pipeline.fireUserInboundEventTriggered(identity) }
                }
            })
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
            withErrorHandling: true)
        try channel.pipeline.syncOperations.addHandler(HTTPListenerHandler(files: files, idleTimeout: idleTimeout))
    }

    /// The response's `Sec-WebSocket-Protocol` for an upgrade request, or nil to refuse it: the first of
    /// ``subprotocols`` the client offers (its header may be repeated, each a comma-separated list).
    static func upgradeHeaders(for request: HTTPRequestHead) -> HTTPHeaders? {
        let offered = request.headers["Sec-WebSocket-Protocol"].flatMap { value in
            value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        guard let chosen = offered.first(where: subprotocols.contains) else { return nil }
        var headers = HTTPHeaders()
        headers.add(name: "Sec-WebSocket-Protocol", value: chosen)
        return headers
    }
}

/// Why a WebSocket listener could not start.
public enum WebSocketListenerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The listener's `http_dir` does not exist (any more) or is not a directory.
    case httpDirectoryUnusable(String)

    public var description: String {
        switch self {
        case .httpDirectoryUnusable(let path): "http_dir \(path): no such directory"
        }
    }
}
