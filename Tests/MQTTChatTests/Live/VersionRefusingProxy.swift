import Foundation
import LiveTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay in front of a broker that plays an MQTT 3.1.1-only broker: it reads each CONNECT, refuses protocol
/// level 5 with a CONNACK and closes, and relays every other connection (CONNECT included) to the real broker.
/// It records the protocol level of every CONNECT it saw. Relayed connections end when their client disconnects.
final class VersionRefusingProxy: @unchecked Sendable {
    // @unchecked: `levels` is only touched while holding `lock`.

    /// How the CONNECT at level 5 is refused.
    enum Refusal: String, Sendable, CaseIterable, CustomStringConvertible {
        /// MQTT 5 CONNACK with reason code 0x84 (Unsupported Protocol Version) and no properties.
        case reasonCode0x84
        /// An MQTT 3.1.1 broker's CONNACK: return code 1 (unacceptable protocol version).
        case returnCode1

        var description: String { rawValue }

        var connAck: [UInt8] {
            switch self {
            case .reasonCode0x84: [0x20, 0x03, 0x00, 0x84, 0x00]
            case .returnCode1: [0x20, 0x02, 0x00, 0x01]
            }
        }
    }

    let port: Int
    private let upstreamPort: Int
    private let refusal: Refusal
    private let listener: Int32
    private let lock = NSLock()
    private var levels: [UInt8] = []

    init(upstreamPort: Int, refusal: Refusal) throws {
        self.upstreamPort = upstreamPort
        self.refusal = refusal
        let (fd, port) = try listeningSocket()
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// The protocol levels of the CONNECTs seen so far, in order.
    var connectLevels: [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        return levels
    }

    /// Stops accepting connections (the accept thread ends and closes the listener).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                close(listener)
                return
            }
            guard let connect = readPacket(client), let level = Self.protocolLevel(connect) else {
                close(client)
                continue
            }
            lock.lock()
            levels.append(level)
            lock.unlock()
            if level == 5 {
                _ = refusal.connAck.withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
                shutdown(client, Int32(SHUT_WR))
                close(client)
                continue
            }
            guard let upstream = try? connectedSocket(port: upstreamPort) else {
                close(client)
                continue
            }
            _ = connect.withUnsafeBytes { send(upstream, $0.baseAddress, $0.count, 0) }
            let pair = SocketPair(client, upstream)
            Thread.detachNewThread { relay(from: client, to: upstream, pair: pair) }
            Thread.detachNewThread { relay(from: upstream, to: client, pair: pair) }
        }
    }

    /// One whole MQTT packet (fixed header, remaining length, body), read with a bounded wait.
    private func readPacket(_ fd: Int32) -> [UInt8]? {
        var packet: [UInt8] = []
        func readByte() -> UInt8? {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 5000) == 1 else { return nil }
            var byte: UInt8 = 0
            guard recv(fd, &byte, 1, 0) == 1 else { return nil }
            packet.append(byte)
            return byte
        }
        guard readByte() != nil else { return nil }
        var remaining = 0
        var shift = 0
        while true {
            guard let byte = readByte(), shift <= 21 else { return nil }
            remaining |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        for _ in 0..<remaining where readByte() == nil { return nil }
        return packet
    }

    /// The protocol level of a CONNECT packet: the byte after the protocol name.
    static func protocolLevel(_ packet: [UInt8]) -> UInt8? {
        guard packet.first == 0x10 else { return nil }
        var index = 1
        while index < packet.count, packet[index] & 0x80 != 0 { index += 1 }
        index += 1  // past the remaining length
        guard index + 2 <= packet.count else { return nil }
        let nameLength = Int(packet[index]) << 8 | Int(packet[index + 1])
        let levelIndex = index + 2 + nameLength
        return levelIndex < packet.count ? packet[levelIndex] : nil
    }
}
