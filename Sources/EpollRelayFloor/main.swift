// The latency floor of an MQTT forwarder with a transport of its own: one thread, one level-triggered epoll set,
// plain read(2) and write(2), no SwiftNIO. Together with NIORelayFloor it says what a transport of the broker's own
// could buy over SwiftNIO's (docs/benchmarks.md, Known gaps: Latency).
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
// Usage: EpollRelayFloor [port]   (0 or none: a free port). Prints "listening on 127.0.0.1:PORT".

import CLinuxSockets

#if canImport(Glibc)
import Glibc
#endif

/// One client socket: what it sent that is not yet a whole packet, and what is to be written to it.
final class RelayConnection {
    let descriptor: CInt
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
    /// `outbound` holds bytes the socket did not take; the socket is watched for EPOLLOUT.
    var waitingToWrite = false
    var topics: [String] = []

    init(descriptor: CInt) {
        self.descriptor = descriptor
    }
}

/// The forwarder: the epoll set, the listening socket, the connections and the subscribers by exact topic. Runs on
/// the thread that calls ``run()``; nothing is shared.
final class EpollRelay {
    private let epoll: CInt
    private let listener: CInt
    private var connections: [CInt: RelayConnection] = [:]
    private var subscribers: [String: [RelayConnection]] = [:]
    /// Connections with output queued by the read being handled, deliveries first.
    private var toFlush: [RelayConnection] = []
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// Binds 127.0.0.1:`port` and creates the epoll set; nil (with a message) when either fails.
    init?(port: UInt16) {
        let listener = socket(AF_INET, CInt(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { Self.fail("socket"); return nil }
        var one: CInt = 1
        _ = setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(listener, 4096) == 0 else { Self.fail("bind/listen"); return nil }
        let epoll = epoll_create1(CInt(EPOLL_CLOEXEC))
        guard epoll >= 0 else { Self.fail("epoll_create1"); return nil }
        self.epoll = epoll
        self.listener = listener
        guard control(EPOLL_CTL_ADD, listener, events: EPOLLIN.rawValue) else { return nil }
    }

    /// The port the listening socket got.
    var boundPort: UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Serves until the process is killed.
    func run() -> Never {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, CInt($0.count), -1) }
            if count < 0 {
                if errno == EINTR { continue }
                Self.fail("epoll_wait")
                exit(1)
            }
            for event in events.prefix(Int(count)) {
                let descriptor = CInt(truncatingIfNeeded: event.data.fd)
                if descriptor == listener {
                    acceptAll()
                    continue
                }
                guard let connection = connections[descriptor] else { continue }
                if event.events & EPOLLOUT.rawValue != 0 {
                    writeOut(connection)
                }
                if event.events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                    readIn(connection)
                }
            }
        }
    }

    private func acceptAll() {
        while true {
            let socket = accept4(listener, nil, nil, CInt(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            guard socket >= 0 else { return }
            var one: CInt = 1
            _ = setsockopt(socket, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
            guard control(EPOLL_CTL_ADD, socket, events: EPOLLIN.rawValue) else {
                close(socket)
                continue
            }
            connections[socket] = RelayConnection(descriptor: socket)
        }
    }

    /// One read(2), the packets it completes, then the writes they queued.
    private func readIn(_ connection: RelayConnection) {
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
    private func writeOut(_ connection: RelayConnection) {
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
        let events = EPOLLIN.rawValue | (waiting ? EPOLLOUT.rawValue : 0)
        _ = control(EPOLL_CTL_MOD, connection.descriptor, events: events)
    }

    private func drop(_ connection: RelayConnection) {
        guard connections.removeValue(forKey: connection.descriptor) != nil else { return }
        for topic in connection.topics {
            subscribers[topic]?.removeAll { $0 === connection }
        }
        _ = control(EPOLL_CTL_DEL, connection.descriptor, events: 0)
        close(connection.descriptor)
        connection.outbound = []
    }

    private func control(_ operation: CInt, _ descriptor: CInt, events: UInt32) -> Bool {
        var event = epoll_event()
        event.events = events
        event.data.fd = descriptor
        guard epoll_ctl(epoll, operation, descriptor, &event) == 0 else {
            Self.fail("epoll_ctl")
            return false
        }
        return true
    }

    private static func fail(_ call: String) {
        print("EpollRelayFloor: \(call) failed: \(String(cString: strerror(errno)))")
    }
}

let portArgument = CommandLine.arguments.dropFirst().first.flatMap { UInt16($0) } ?? 0
guard let relay = EpollRelay(port: portArgument) else { exit(1) }
print("listening on 127.0.0.1:\(relay.boundPort)")
fflush(nil)
relay.run()
