// The latency floor of an MQTT forwarder with a transport of its own: an ``EpollEventLoop`` (one thread, one
// level-triggered epoll set), plain read(2) and write(2), no SwiftNIO channel. Together with NIORelayFloor it says
// what a transport of the broker's own could buy over SwiftNIO's (docs/benchmarks.md, Known gaps: Latency).
//
// The same forwarding as NIORelayFloor, and nothing else: CONNECT is accepted, SUBSCRIBE registers exact topic
// filters, a PUBLISH is forwarded byte for byte to the subscribers of its topic and then acknowledged, PUBACKs from
// subscribers are ignored, PINGREQ is answered. No sessions, windows, queues, packet identifiers of its own,
// wildcards or checks: enough for `mqttchat bench --scenario pairs` at QoS 0 or 1, not an MQTT broker. A malformed
// length closes the connection.
//
// Writes are made as the broker makes them: what one read produced is written when that read has been handled, the
// subscribers' deliveries first and the publisher's acknowledgement last, one write(2) per socket. A socket that
// takes only part of a write keeps the rest and is watched for EPOLLOUT until it has taken it.
//
// Its loop polls before it sleeps as the broker's does by default (`poll_before_sleep_us 20`), so it stays the
// floor of the broker's loop under load too.
//
// Usage: EpollRelayFloor [port]   (0 or none: a free port). Prints "listening on 127.0.0.1:PORT".

import CLinuxSockets
import EpollEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// One client socket: what it sent that is not yet a whole packet, and what is to be written to it.
final class RelayConnection: EpollEventHandler {
    unowned let relay: EpollRelay
    let descriptor: CInt
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
    /// `outbound` holds bytes the socket did not take; the socket is watched for EPOLLOUT.
    var waitingToWrite = false
    var topics: [String] = []

    init(relay: EpollRelay, descriptor: CInt) {
        self.relay = relay
        self.descriptor = descriptor
    }

    func descriptorReadable(_ descriptor: CInt) { relay.readIn(self) }

    func descriptorWritable(_ descriptor: CInt) { relay.writeOut(self) }
}

/// The listening socket's handler: accepts what is waiting.
final class RelayListener: EpollEventHandler {
    unowned let relay: EpollRelay

    init(relay: EpollRelay) {
        self.relay = relay
    }

    func descriptorReadable(_ descriptor: CInt) { relay.acceptAll() }

    func descriptorWritable(_ descriptor: CInt) {}
}

/// The forwarder: the listening socket, the connections and the subscribers by exact topic. Confined to its loop.
final class EpollRelay: @unchecked Sendable {
    private let loop: EpollEventLoop
    private let listener: CInt
    private var connections: [CInt: RelayConnection] = [:]
    private var subscribers: [String: [RelayConnection]] = [:]
    /// Connections with output queued by the read being handled, deliveries first.
    private var toFlush: [RelayConnection] = []
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// The port the listening socket got.
    let boundPort: Int

    /// Binds 127.0.0.1:`port` (0: a free one); nil (with a message) when that fails. ``start()`` registers it with
    /// `loop`.
    init?(port: Int, loop: EpollEventLoop) {
        do {
            let (listener, address) = try ListeningSocket.open(host: "127.0.0.1", port: port, backlog: 4096)
            self.listener = listener
            self.boundPort = address.port ?? port
        } catch {
            print("EpollRelayFloor: \(error)")
            return nil
        }
        self.loop = loop
    }

    /// Starts accepting. Call on the loop.
    func start() {
        do {
            try loop.register(listener, interest: .readable, handler: RelayListener(relay: self))
        } catch {
            print("EpollRelayFloor: \(error)")
            exit(1)
        }
    }

    func acceptAll() {
        while true {
            let socket = accept4(listener, nil, nil, CInt(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            guard socket >= 0 else { return }
            var one: CInt = 1
            _ = setsockopt(socket, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
            let connection = RelayConnection(relay: self, descriptor: socket)
            do {
                try loop.register(socket, interest: .readable, handler: connection)
            } catch {
                print("EpollRelayFloor: \(error)")
                close(socket)
                continue
            }
            connections[socket] = connection
        }
    }

    /// One read(2), the packets it completes, then the writes they queued.
    func readIn(_ connection: RelayConnection) {
        let count = readBuffer.withUnsafeMutableBytes { read(connection.descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EAGAIN || errno == EINTR { return }
        guard count > 0 else {
            drop(connection)
            return
        }
        connection.inbound.append(contentsOf: readBuffer[0 ..< count])
        var start = 0
        while true {
            switch Self.frame(connection.inbound, from: start) {
            case .packet(let firstByte, let body, let end):
                handle(firstByte: firstByte, body: body, packet: start ..< end, from: connection)
                start = end
            case .needMoreBytes:
                connection.inbound.removeFirst(start)
                flushQueued(lastly: connection)
                return
            case .malformedLength:
                flushQueued(lastly: connection)  // what the earlier packets of this read queued still leaves
                drop(connection)
                return
            }
        }
    }

    private enum Framing {
        case packet(firstByte: UInt8, body: Range<Int>, end: Int)
        case needMoreBytes
        case malformedLength
    }

    /// Cuts the packet that starts at `start` (first byte, remaining length, body).
    private static func frame(_ bytes: [UInt8], from start: Int) -> Framing {
        var length = 0
        var index = start + 1
        var shift = 0
        while true {
            guard index < bytes.count else { return .needMoreBytes }
            let byte = bytes[index]
            length |= Int(byte & 0x7F) << shift
            index += 1
            if byte & 0x80 == 0 { break }
            shift += 7
            if shift > 21 { return .malformedLength }
        }
        guard index + length <= bytes.count else { return .needMoreBytes }
        return .packet(firstByte: bytes[start], body: index ..< index + length, end: index + length)
    }

    private func handle(firstByte: UInt8, body: Range<Int>, packet: Range<Int>, from connection: RelayConnection) {
        let bytes = connection.inbound
        switch firstByte >> 4 {
        case 1:  // CONNECT
            queue([0x20, 0x02, 0x00, 0x00], to: connection)
        case 8:  // SUBSCRIBE: every filter granted at the QoS asked for
            guard body.count >= 2 else { return }
            var granted: [UInt8] = [0x90, 0, bytes[body.lowerBound], bytes[body.lowerBound + 1]]
            var index = body.lowerBound + 2
            while index + 2 <= body.upperBound {
                let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                guard index + 2 + length + 1 <= body.upperBound else { break }
                let filter = String(decoding: bytes[index + 2 ..< index + 2 + length], as: UTF8.self)
                subscribers[filter, default: []].append(connection)
                connection.topics.append(filter)
                granted.append(bytes[index + 2 + length])
                index += 2 + length + 1
            }
            granted[1] = UInt8(granted.count - 2)
            queue(granted, to: connection)
        case 3:  // PUBLISH: forwarded as it came, then acknowledged at QoS 1 and 2
            guard body.count >= 2 else { return }
            let length = Int(bytes[body.lowerBound]) << 8 | Int(bytes[body.lowerBound + 1])
            let topicEnd = body.lowerBound + 2 + length
            guard topicEnd <= body.upperBound else { return }
            let topic = String(decoding: bytes[body.lowerBound + 2 ..< topicEnd], as: UTF8.self)
            for subscriber in subscribers[topic] ?? [] {
                queue(bytes[packet], to: subscriber)
            }
            let qos = (firstByte >> 1) & 0x03
            if qos > 0, topicEnd + 2 <= body.upperBound {
                queue([qos == 1 ? 0x40 : 0x50, 0x02, bytes[topicEnd], bytes[topicEnd + 1]], to: connection)
            }
        case 12:  // PINGREQ
            queue([0xD0, 0x00], to: connection)
        default:
            break  // PUBACK, PUBREC, DISCONNECT (the close follows) and the rest: ignored
        }
    }

    private func queue(_ bytes: some Collection<UInt8>, to connection: RelayConnection) {
        if connection.outbound.isEmpty, !connection.waitingToWrite, connection !== toFlush.last {
            toFlush.append(connection)
        }
        connection.outbound.append(contentsOf: bytes)
    }

    /// Writes what the read queued: every other socket first, then `connection` (the publisher's acknowledgement).
    private func flushQueued(lastly connection: RelayConnection) {
        for target in toFlush where target !== connection && !target.waitingToWrite {
            writeOut(target)
        }
        if !connection.waitingToWrite, !connection.outbound.isEmpty {
            writeOut(connection)
        }
        toFlush.removeAll(keepingCapacity: true)
    }

    /// Writes `connection`'s queued bytes; what the socket does not take waits for EPOLLOUT.
    func writeOut(_ connection: RelayConnection) {
        guard !connection.outbound.isEmpty else { return }
        let written = connection.outbound.withUnsafeBytes { write(connection.descriptor, $0.baseAddress, $0.count) }
        if written < 0, errno != EAGAIN, errno != EINTR {
            drop(connection)
            return
        }
        connection.outbound.removeFirst(max(0, written))
        let waiting = !connection.outbound.isEmpty
        guard waiting != connection.waitingToWrite else { return }
        connection.waitingToWrite = waiting
        try? loop.reregister(connection.descriptor, interest: waiting ? [.readable, .writable] : .readable)
    }

    private func drop(_ connection: RelayConnection) {
        guard connections.removeValue(forKey: connection.descriptor) != nil else { return }
        for topic in connection.topics {
            subscribers[topic]?.removeAll { $0 === connection }
        }
        loop.deregister(connection.descriptor)
        close(connection.descriptor)
        connection.outbound = []
    }
}

let portArgument = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 0
let loop: EpollEventLoop
do {
    loop = try EpollEventLoop(name: "epoll-relay-floor", pollBeforeSleep: .microseconds(20))
} catch {
    print("EpollRelayFloor: \(error)")
    exit(1)
}
guard let relay = EpollRelay(port: portArgument, loop: loop) else { exit(1) }
loop.execute { relay.start() }
print("listening on 127.0.0.1:\(relay.boundPort)")
fflush(nil)
while true { pause() }  // the loop's thread serves until the process is killed
