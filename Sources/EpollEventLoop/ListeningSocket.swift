#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import NIOCore

/// A plain-TCP listening socket opened without NIO's `ServerBootstrap`, so its owner knows the descriptor of every
/// connection it accepts: the broker, which parks idle connections, and `EpollRelayFloor`.
/// Options as NIO's listener had them: `SO_REUSEADDR`, a backlog of 256 unless told, non-blocking.
public enum ListeningSocket {
    /// Binds `host:port` (port 0 picks a free port) and listens. Returns the descriptor and the bound address.
    public static func open(
        host: String, port: Int, backlog: CInt = 256
    ) throws -> (descriptor: CInt, address: SocketAddress) {
        let requested = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let family: CInt = switch requested {
        case .v6: AF_INET6
        default: AF_INET
        }
        let descriptor = socket(family, CInt(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemCallError.systemCall("socket", errno) }
        do {
            var one: CInt = 1
            guard setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                throw SystemCallError.systemCall("setsockopt(SO_REUSEADDR)", errno)
            }
            let bound = requested.withSockAddr { address, length in bind(descriptor, address, socklen_t(length)) }
            guard bound == 0 else { throw SystemCallError.systemCall("bind \(host):\(port)", errno) }
            guard listen(descriptor, backlog) == 0 else { throw SystemCallError.systemCall("listen", errno) }
            return (descriptor, try SocketAddress.local(of: descriptor, host: host))
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// `SO_KEEPALIVE`, which every accepted connection gets once (it stays with the socket through parking), and
    /// `TCP_NODELAY` when asked. A socket given to NIO needs no `noDelay`: `ClientBootstrap` sets it whenever it
    /// takes a socket.
    public static func configureAccepted(_ descriptor: CInt, noDelay: Bool = false) {
        var one: CInt = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<CInt>.size))
        if noDelay {
            _ = setsockopt(descriptor, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
        }
    }
}
