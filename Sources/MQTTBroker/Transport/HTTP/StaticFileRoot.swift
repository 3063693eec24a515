import Foundation
import NIOCore

/// A listener's `http_dir`, resolved to its real path when the listener starts, and the blocking work of serving one
/// file from it. Every method here makes system calls that may block (`realpath`, `open`, `read`), so the HTTP
/// handler runs them on NIO's thread pool, never on an event loop.
struct StaticFileRoot: Sendable {
    /// What a request for one file comes to.
    enum Outcome: Sendable {
        /// A regular file inside the directory: its size, type and (for GET) its bytes.
        case file(size: Int, contentType: String, body: ByteBuffer?)
        /// A directory inside the directory, asked for without the trailing `/`: redirect there.
        case directory
        case notFound
        /// Outside the directory once symlinks are resolved, unreadable, or not a regular file.
        case forbidden
        /// Larger than ``maximumFileSize``.
        case tooLarge
    }

    /// The directory's real path (no symlinks, no `..`), which every served file's real path must lie under.
    let path: String
    /// Files above this size are refused rather than read into memory.
    let maximumFileSize: Int

    /// Resolves `directory` (relative to the working directory, as every path in the config); nil when it does not
    /// exist or is not a directory.
    init?(directory: String, maximumFileSize: Int) {
        guard let resolved = Self.realPath(directory) else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        self.path = resolved
        self.maximumFileSize = maximumFileSize
    }

    /// Finds and (when `readingBody`) reads the file at `relativePath` (from ``StaticFilePath``). Blocking.
    func load(_ relativePath: String, readingBody: Bool) -> Outcome {
        guard let resolved = Self.realPath(relativePath.isEmpty ? path : path + "/" + relativePath) else {
            return errno == EACCES ? .forbidden : .notFound
        }
        // A symlink may point anywhere: only what really lies under the directory is served (mosquitto checks so too).
        let prefix = path.hasSuffix("/") ? path : path + "/"
        guard resolved == path || resolved.hasPrefix(prefix) else { return .forbidden }
        // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
        let descriptor = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return errno == ENOENT ? .notFound : .forbidden }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return .forbidden }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: break
        default: return .forbidden  // devices, FIFOs, sockets
        }
        let size = Int(status.st_size)
        guard size <= maximumFileSize else { return .tooLarge }
        let contentType = StaticFilePath.contentType(forPath: resolved)
        guard readingBody else { return .file(size: size, contentType: contentType, body: nil) }
        guard let body = Self.readBody(descriptor, size: size) else { return .forbidden }
        // The length actually read: a file that shrinks while it is read goes out as far as it went, never with a
        // Content-Length that promises more.
        return .file(size: body.readableBytes, contentType: contentType, body: body)
    }

    /// Reads up to `size` bytes; nil on a read error.
    private static func readBody(_ descriptor: CInt, size: Int) -> ByteBuffer? {
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        while buffer.readableBytes < size {
            let wanted = size - buffer.readableBytes
            var count = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw in
                count = read(descriptor, raw.baseAddress, wanted)
                return max(count, 0)
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }  // truncated meanwhile
        }
        return buffer
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
