import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A port of 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
public func freePort() throws -> Int {
    let (fd, port) = try boundSocket(listening: false)
    close(fd)
    return port
}

/// A port of 127.0.0.1 where nothing listens, held by a socket that is bound but not listening: a connection to it
/// is refused, and no other socket (another test's broker binding port 0) can take the port while `descriptor` is
/// open, as it could take a ``freePort()``. The caller closes the descriptor.
public func refusingPort() throws -> (descriptor: Int32, port: Int) {
    try boundSocket(listening: false)
}

/// A socket listening on 127.0.0.1 at a port the kernel chose, and that port; the caller closes it.
public func listeningSocket() throws -> (descriptor: Int32, port: Int) {
    try boundSocket(listening: true)
}

/// A socket bound to 127.0.0.1 at a port the kernel chose (and listening, if asked), and that port.
private func boundSocket(listening: Bool) throws -> (descriptor: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed, errno \(errno)") }
    var address = loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && (!listening || listen(fd, 16) == 0) && getsockname(fd, $0, &length) == 0
        }
    }
    guard named else {
        let error = errno
        close(fd)
        throw HarnessError("bind\(listening ? "/listen" : "")/getsockname on 127.0.0.1:0 failed, errno \(error)")
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}

/// A blocking socket connected to 127.0.0.1:`port`; the caller closes it. A `receiveBufferSize` is set before
/// connecting, so that the window the socket advertises stays that small (a client that reads slowly, or not at all).
public func connectedSocket(port: Int, receiveBufferSize: Int32? = nil) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HarnessError("socket() failed, errno \(errno)") }
    if var size = receiveBufferSize {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = loopback(port: port)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        let error = errno
        close(fd)
        throw HarnessError("connect to 127.0.0.1:\(port) failed, errno \(error)")
    }
    return fd
}

/// The IPv4 socket address 127.0.0.1:`port`.
public func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// Whether process `pid` holds the socket listening on 127.0.0.1:`port` (Linux: the listener's inode in
/// `/proc/net/tcp` among the process's descriptors). Another test's broker may listen on a port that was free
/// when this one probed it; a connection to that port then reaches a broker that is not the one just started.
public func listener(port: Int, isHeldBy pid: Int32) -> Bool {
    guard let table = readWholeFile("/proc/net/tcp") else { return false }
    let wanted = String(format: "0100007F:%04X", port)
    let inodes = table.split(separator: "\n").dropFirst().compactMap { line -> String? in
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        // sl, local_address, rem_address, st (0A: LISTEN), tx:rx, tr:when, retrnsmt, uid, timeout, inode
        guard fields.count > 9, fields[1] == wanted, fields[3] == "0A" else { return nil }
        return "socket:[\(fields[9])]"
    }
    guard !inodes.isEmpty,
        let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
    else { return false }
    return descriptors.contains { descriptor in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
        else { return false }
        return inodes.contains(target)
    }
}

/// The whole of a file read with `read(2)` until its end: a `/proc` file reports size 0 and is produced a page at a
/// time, and Foundation's readers can stop after the first page.
private func readWholeFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while bytes.count < 64 << 20 {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { return nil }
        if count == 0 { break }
        bytes += chunk[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
