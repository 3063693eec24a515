import Foundation
import LiveTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay in front of the broker whose connections can be cut at once.
///
/// Cutting them makes the broker see the client's TCP connection die without an MQTT DISCONNECT, exactly
/// as when the client process is killed, so the broker publishes the client's will.
final class DroppableProxy: @unchecked Sendable {
    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var sockets: [Int32] = []
    private var isDropped = false
    private var isFrozen = false

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed, errno \(errno)") }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw HarnessError("bind/listen on 127.0.0.1:0 failed, errno \(errno)")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Cuts every relayed connection but keeps accepting new ones (a network blip the client can recover from).
    func cutConnections() {
        lock.lock()
        let open = sockets
        sockets.removeAll()
        lock.unlock()
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Stops relaying in both directions but keeps every connection open: a hung process or a partitioned network.
    /// The broker notices only when the keep-alive expires, so the client's will comes late (or never, in a test
    /// shorter than that).
    func freeze() {
        lock.lock()
        isFrozen = true
        lock.unlock()
    }

    private var frozen: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isFrozen
    }

    /// Cuts every relayed connection and stops accepting new ones.
    func dropAll() {
        lock.lock()
        isDropped = true
        let open = sockets
        sockets.removeAll()
        lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        dropAll()
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            guard let upstream = try? connectedSocket(port: upstreamPort) else {
                close(client)
                continue
            }
            lock.lock()
            let dropped = isDropped
            if !dropped { sockets += [client, upstream] }
            lock.unlock()
            if dropped {
                close(client)
                close(upstream)
                return
            }
            let pair = SocketPair(client, upstream)
            Thread.detachNewThread { [self] in relay(from: client, to: upstream, pair: pair) { frozen } }
            Thread.detachNewThread { [self] in relay(from: upstream, to: client, pair: pair) { frozen } }
        }
    }
}
