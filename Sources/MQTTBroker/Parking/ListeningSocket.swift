#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

/// A plain-TCP listening socket the broker opens itself rather than through NIO's `ServerBootstrap`, so it knows
/// the descriptor of every connection it accepts, which parking an idle connection needs (``ConnectionParking``).
/// Options as the NIO listener had them: `SO_REUSEADDR`, a backlog of 256, non-blocking.
enum ListeningSocket {
    /// Binds `host:port` (port 0 picks a free port) and listens. Returns the descriptor and the bound address.
    static func open(host: String, port: Int) throws -> (descriptor: CInt, address: SocketAddress) {
        let requested = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let family: CInt = switch requested {
        case .v6: AF_INET6
        default: AF_INET
        }
        let descriptor = socket(family, CInt(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketWatcherError.systemCall("socket", errno) }
        do {
            var one: CInt = 1
            guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                throw SocketWatcherError.systemCall("setsockopt(SO_REUSEADDR)", errno)
            }
            let bound = requested.withSockAddr { address, length in bind(descriptor, address, socklen_t(length)) }
            guard bound == 0 else { throw SocketWatcherError.systemCall("bind \(host):\(port)", errno) }
            guard listen(descriptor, 256) == 0 else { throw SocketWatcherError.systemCall("listen", errno) }
            return (descriptor, try localAddress(of: descriptor, host: host))
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// The address a socket is bound to (with the real port when it was bound to port 0).
    private static func localAddress(of descriptor: CInt, host: String) throws -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw SocketWatcherError.systemCall("getsockname", errno) }
        switch CInt(storage.ss_family) {
        case AF_INET6:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee } }
            return SocketAddress(address, host: host)
        default:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee } }
            return SocketAddress(address, host: host)
        }
    }

    /// `SO_KEEPALIVE`, which every accepted connection gets once (it stays with the socket through parking).
    /// `TCP_NODELAY` is NIO's: `ClientBootstrap` sets it whenever it takes a socket.
    static func configureAccepted(_ descriptor: CInt) {
        var one: CInt = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<CInt>.size))
    }
}

/// File-descriptor calls under names that do not clash with the connection's own `close(_:)`.
enum Descriptor {
    /// `dup(2)`: a second descriptor for the same socket, or nil.
    static func duplicate(_ descriptor: CInt) -> CInt? {
        let copy = dup(descriptor)
        return copy >= 0 ? copy : nil
    }

    /// `close(2)`.
    static func close(_ descriptor: CInt) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #endif
    }
}
