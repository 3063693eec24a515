#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import NIOCore

extension SocketAddress {
    /// The address `descriptor` is bound to (`getsockname`), with the real port when it was bound to port 0, named
    /// `host` (the name it was bound by) or by its numeric address.
    public static func local(of descriptor: CInt, host: String? = nil) throws(SystemCallError) -> SocketAddress {
        try address(of: descriptor, host: host, "getsockname", getsockname)
    }

    /// The address of the peer `descriptor` is connected to (`getpeername`).
    public static func peer(of descriptor: CInt) throws(SystemCallError) -> SocketAddress {
        try address(of: descriptor, host: nil, "getpeername", getpeername)
    }

    private static func address(
        of descriptor: CInt, host: String?, _ name: String,
        _ call: (CInt, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> CInt
    ) throws(SystemCallError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(descriptor, $0, &length) }
        }
        guard result == 0 else { throw SystemCallError.systemCall(name, errno) }
        switch CInt(storage.ss_family) {
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    host.map { [address = $0.pointee] in SocketAddress(address, host: $0) } ?? SocketAddress($0.pointee)
                }
            }
        default:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    host.map { [address = $0.pointee] in SocketAddress(address, host: $0) } ?? SocketAddress($0.pointee)
                }
            }
        }
    }
}
