import NIOCore
import NIOWebSocket

/// What the MQTT-over-WebSocket rules (MQTT 3.1.1 section 6, RFC 6455) make of each frame a client sends: a value
/// type with no channel, so the rules are tested frame by frame; ``WebSocketMQTTHandler`` carries out its answers.
///
/// MQTT is a byte stream, so the frames' payloads are passed on as they come: a packet may span frames and a frame
/// may hold several packets, and the connection's decoder reassembles them as it does TCP reads. Nothing is
/// aggregated here, so a fragmented message costs no more memory than its largest frame.
struct WebSocketInbound {
    /// What to do with one frame.
    enum Action: Equatable {
        /// Pass these MQTT bytes on to the connection.
        case deliver(ByteBuffer)
        /// Nothing to do (an empty data frame, a pong, any frame after the close handshake began).
        case ignore
        /// Answer a ping with this payload.
        case pong(ByteBuffer)
        /// The client closed: echo its status code (RFC 6455 5.5.1), then close the connection.
        case answerClose(WebSocketErrorCode?)
        /// The client broke a rule: send a close frame with this code, then close the connection.
        case fail(WebSocketErrorCode)
    }

    /// Whether a data message is open (its first frame had FIN clear), so continuation frames may follow.
    private var messageInProgress = false
    /// A close frame was sent or received: the connection is ending and later frames mean nothing.
    private(set) var isClosing = false

    /// Decides what `frame` means and moves the state on.
    mutating func receive(_ frame: WebSocketFrame) -> Action {
        guard !isClosing else { return .ignore }
        // RFC 6455 5.1: a server MUST close the connection on an unmasked client frame.
        guard frame.maskKey != nil else { return fail(.protocolError) }
        // No extension was negotiated, so the reserved bits must be clear.
        guard !frame.rsv1 && !frame.rsv2 && !frame.rsv3 else { return fail(.protocolError) }
        switch frame.opcode {
        case .binary:
            guard !messageInProgress else { return fail(.protocolError) }  // a new message inside a fragmented one
            messageInProgress = !frame.fin
            return deliver(frame)
        case .continuation:
            guard messageInProgress else { return fail(.protocolError) }
            messageInProgress = !frame.fin
            return deliver(frame)
        case .text:
            // MQTT 3.1.1 section 6: "If any other type of data frame is received the recipient MUST close the
            // Network Connection"; 1003 says the data type is not accepted.
            return fail(.unacceptableData)
        case .ping:
            return .pong(frame.unmaskedData)
        case .pong:
            return .ignore
        case .connectionClose:
            isClosing = true
            var data = frame.unmaskedData
            return .answerClose(data.readableBytes >= 2 ? data.readWebSocketErrorCode() : nil)
        default:
            return fail(.protocolError)  // reserved opcodes
        }
    }

    /// The broker starts the close handshake (the connection is closing): frames that still arrive are ignored.
    mutating func closeSent() {
        isClosing = true
    }

    private func deliver(_ frame: WebSocketFrame) -> Action {
        let data = frame.unmaskedData
        return data.readableBytes == 0 ? .ignore : .deliver(data)
    }

    private mutating func fail(_ code: WebSocketErrorCode) -> Action {
        isClosing = true
        return .fail(code)
    }
}
