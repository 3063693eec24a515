import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// The byte relay both test proxies (DroppableProxy, VersionRefusingProxy) run between a client and the broker.

/// Two relayed sockets, closed by whichever relay thread finishes last.
// @unchecked: `running` is only touched while holding `lock`.
final class SocketPair: @unchecked Sendable {
    private let lock = NSLock()
    private var running = 2
    private let sockets: (Int32, Int32)

    init(_ first: Int32, _ second: Int32) { sockets = (first, second) }

    func relayFinished() {
        lock.lock()
        running -= 1
        let last = running == 0
        lock.unlock()
        if last {
            close(sockets.0)
            close(sockets.1)
        }
    }
}

/// Copies bytes until either side closes, then shuts both down. While `swallow` says so, bytes read are dropped
/// instead (a hung peer: the connection stays open, nothing gets through).
func relay(from source: Int32, to destination: Int32, pair: SocketPair, swallow: @Sendable () -> Bool = { false }) {
    defer { pair.relayFinished() }
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    loop: while true {
        let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        if swallow() { continue }
        var offset = 0
        while offset < count {
            let written = buffer.withUnsafeBytes { bytes in
                write(destination, bytes.baseAddress.map { $0 + offset }, count - offset)
            }
            if written <= 0 { break loop }
            offset += written
        }
    }
    shutdown(source, Int32(SHUT_RDWR))
    shutdown(destination, Int32(SHUT_RDWR))
}
