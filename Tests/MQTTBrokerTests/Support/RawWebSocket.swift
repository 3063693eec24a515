import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore

/// A WebSocket client written out by hand over a ``RawConnection``, so a test can send what no library would: unmasked
/// frames, frames split across TCP writes, fragmented messages, text frames, frames that claim to be huge. It reads
/// the broker's frames (never masked) one by one with a bounded wait.
final class RawWebSocket {
    /// One frame as the broker sent it.
    struct Frame: Equatable {
        var opcode: UInt8
        var fin: Bool
        var payload: [UInt8]

        /// The status code of a close frame.
        var closeCode: UInt16? {
            guard opcode == RawWebSocket.close, payload.count >= 2 else { return nil }
            return UInt16(payload[0]) << 8 | UInt16(payload[1])
        }
    }

    static let continuation: UInt8 = 0x0
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA

    let connection: RawConnection
    /// The upgrade response's header lines, lower-cased names.
    let responseHeaders: [String: String]
    /// Bytes of ``RawConnection/received()`` already parsed (the upgrade response, then frames).
    private var consumed: Int
    /// MQTT bytes from binary frames not yet decoded into a packet.
    private var mqttBytes = ByteBuffer()
    private var decoder = MQTTPacketDecoder()

    private init(connection: RawConnection, responseHeaders: [String: String], consumed: Int) {
        self.connection = connection
        self.responseHeaders = responseHeaders
        self.consumed = consumed
    }

    /// Connects and upgrades at `path`, offering `subprotocols` (none: no `Sec-WebSocket-Protocol` header); throws
    /// unless the broker answers 101.
    static func open(
        to address: SocketAddress, path: String = "/mqtt", subprotocols: [String] = ["mqtt"]
    ) async throws -> RawWebSocket {
        let connection = try await RawConnection.open(to: address)
        try await connection.send(Array(upgradeRequest(path: path, subprotocols: subprotocols).utf8))
        let response = try await HTTPTestResponse.read(from: connection, untilClose: false)
        guard response.status == 101 else {
            await connection.close()
            throw HarnessError("upgrade answered \(response.status): \(response.headers)")
        }
        return RawWebSocket(connection: connection, responseHeaders: response.headers, consumed: response.length)
    }

    static func upgradeRequest(path: String, subprotocols: [String]) -> String {
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty { request += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n" }
        return request + "\r\n"
    }

    /// The bytes of one client frame: masked unless told otherwise, with the shortest length encoding unless
    /// `claimedLength` overrides it (a frame that announces more than it carries).
    static func frame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, claimedLength: UInt64? = nil
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        let length = claimedLength ?? UInt64(payload.count)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes += [UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8((length >> (8 * UInt64($0))) & 0xFF) }
        }
        guard masked else { return bytes + payload }
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        return bytes + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    /// The encoded bytes of MQTT packets, back to back.
    static func mqtt(_ packets: MQTTPacket...) throws -> [UInt8] {
        var buffer = ByteBuffer()
        for packet in packets { try MQTTPacketEncoder.encode(packet, into: &buffer) }
        return Array(buffer.readableBytesView)
    }

    func sendRaw(_ bytes: [UInt8]) async throws {
        try await connection.send(bytes)
    }

    /// Sends `packets` in one masked binary frame.
    func send(_ packets: MQTTPacket...) async throws {
        var buffer = ByteBuffer()
        for packet in packets { try MQTTPacketEncoder.encode(packet, into: &buffer) }
        try await sendRaw(Self.frame(Self.binary, Array(buffer.readableBytesView)))
    }

    /// The next frame from the broker; throws after `timeout`.
    func nextFrame(timeout: Duration = .seconds(5)) async throws -> Frame {
        var parsed: (frame: Frame, length: Int)?
        _ = try await poll(every: .milliseconds(5), for: timeout) {
            let bytes = try await connection.received()
            parsed = Self.parse(bytes[consumed...])
            return parsed != nil
        }
        guard let parsed else { throw HarnessError("no frame from the broker within \(timeout)") }
        consumed += parsed.length
        return parsed.frame
    }

    /// The next MQTT packet from the broker's binary frames (a packet may span frames); throws on any other frame.
    func nextPacket(timeout: Duration = .seconds(5)) async throws -> MQTTPacket {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let packet = try decoder.decode(from: &mqttBytes) { return packet }
            let frame = try await nextFrame(timeout: max(.milliseconds(1), deadline - ContinuousClock.now))
            guard frame.opcode == Self.binary || frame.opcode == Self.continuation else {
                throw HarnessError("expected MQTT in a binary frame, got \(frame)")
            }
            mqttBytes.writeBytes(frame.payload)
        }
    }

    func close() async {
        await connection.close()
    }

    /// A whole unmasked frame at the start of `bytes`, with its length on the wire.
    private static func parse(_ bytes: ArraySlice<UInt8>) -> (frame: Frame, length: Int)? {
        let bytes = Array(bytes)
        guard bytes.count >= 2, bytes[1] & 0x80 == 0 else { return nil }
        var length = Int(bytes[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard bytes.count >= offset + length else { return nil }
        let frame = Frame(opcode: bytes[0] & 0x0F, fin: bytes[0] & 0x80 != 0, payload: Array(bytes[offset..<offset + length]))
        return (frame, offset + length)
    }
}

/// An HTTP response read off a ``RawConnection``.
struct HTTPTestResponse {
    var status: Int
    /// Header lines, lower-cased names.
    var headers: [String: String]
    var body: [UInt8]
    /// Bytes of the head (and body, when read to the close).
    var length: Int

    /// Sends `request` (`Connection: close` is added) on a new connection and reads the response up to the broker's
    /// close.
    static func fetch(_ request: String, from address: SocketAddress) async throws -> HTTPTestResponse {
        let connection = try await RawConnection.open(to: address)
        do {
            let text = request.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n")
            try await connection.send(Array(text.utf8))
            let response = try await read(from: connection, untilClose: true)
            await connection.close()
            return response
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Waits for a whole response head, then (`untilClose`) for the broker to close; the body is what follows the head.
    static func read(from connection: RawConnection, untilClose: Bool) async throws -> HTTPTestResponse {
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        _ = try await poll(every: .milliseconds(5), for: .seconds(5)) {
            let bytes = try await connection.received()
            headEnd = bytes.indices.first { bytes[$0...].starts(with: separator) }
            return headEnd != nil
        }
        guard let headEnd else { throw HarnessError("no HTTP response head within 5 s") }
        if untilClose, await !connection.closedByBroker(within: .seconds(5)) {
            throw HarnessError("the broker did not close the HTTP connection")
        }
        let bytes = try await connection.received()
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusWords = lines.first?.split(separator: " ") ?? []
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else {
            throw HarnessError("bad status line: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let bodyStart = headEnd + separator.count
        let body = untilClose ? Array(bytes[bodyStart...]) : []
        return HTTPTestResponse(status: status, headers: headers, body: body, length: untilClose ? bytes.count : bodyStart)
    }
}
