import Foundation

/// Reads configuration files with errors a person can act on ("no such file", "permission denied") instead of
/// Foundation's NSCocoaErrorDomain dumps.
enum ConfigFileReader {
    /// The UTF-8 text of the file at `path`.
    static func text(of path: String) throws(BrokerConfigError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(path: path, reason: reason(errno)) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let data: Data
        do { data = try handle.readToEnd() ?? Data() } catch {
            // read(2) fails on a directory with EISDIR; other failures are rare I/O errors.
            var status = stat()
            let isDirectory = fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
            throw .unreadable(path: path, reason: isDirectory ? "is a directory" : "read error")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .unreadable(path: path, reason: "not UTF-8 text")
        }
        return text
    }

    /// The `*.conf` files of `directory` in mosquitto's `include_dir` order: alphabetical ignoring case, and an
    /// upper-case letter before the lower-case one (`A.conf`, `a.conf`, `B.conf`).
    static func includedFiles(in directory: String, line: ConfigLine) throws(BrokerConfigError) -> [String] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: directory) } catch {
            var status = stat()
            let reason = stat(directory, &status) != 0 ? reason(errno) : "not a readable directory"
            throw .invalidFile(source: line.source, line: line.number, option: "include_dir", reason: "\(directory): \(reason)")
        }
        let sorted = names.filter { $0.hasSuffix(".conf") }.sorted { lhs, rhs in
            let (left, right) = (lhs.lowercased(), rhs.lowercased())
            return left != right ? left < right : lhs < rhs  // ASCII: 'A' (65) sorts before 'a' (97)
        }
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        return sorted.map { base + $0 }
    }

    /// A short reason for an `open`/`stat` errno.
    private static func reason(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file"
        case EACCES, EPERM: "permission denied"
        case ENOTDIR: "a path component is not a directory"
        case EISDIR: "is a directory"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
