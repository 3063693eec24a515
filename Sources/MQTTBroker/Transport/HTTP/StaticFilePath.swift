/// Turns an HTTP request target into a path relative to a listener's `http_dir`, refusing every spelling that could
/// reach outside it. Pure string work, so each refusal is tested without files; the directory itself is checked
/// again after symlinks are resolved (``StaticFileRoot``), since a path of plain names may still be a link out.
enum StaticFilePath {
    /// Why a request target names no file inside the directory.
    enum Refusal: Error, Equatable {
        /// Not an origin-form target (`/path`), or broken percent-encoding or UTF-8: 400.
        case malformed
        /// A `.` or `..` segment, or an encoded `/`, `\` or NUL, in any spelling: 403.
        case outsideDirectory
    }

    /// The file `target` asks for, relative to the directory: its segments, percent-decoded, joined by `/`; a target
    /// ending in `/` asks for that directory's `index.html`. The query and fragment are ignored.
    static func relativePath(forTarget target: String) -> Result<String, Refusal> {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        // Origin form only: an absolute URL or `*` names no file of ours.
        guard path.first == "/" else { return .failure(.malformed) }
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let bytes = percentDecoded(raw) else { return .failure(.malformed) }
            // An encoded separator would make one segment two after decoding (`..%2f..`); NUL ends a C path early.
            if bytes.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") || $0 == 0 }) {
                return .failure(.outsideDirectory)
            }
            let segment = String(decoding: bytes, as: UTF8.self)
            guard segment.utf8.elementsEqual(bytes) else { return .failure(.malformed) }  // not UTF-8
            // Refused rather than normalised: a well-behaved client never sends them (browsers and curl resolve
            // dot segments before sending), so they only come from someone probing for a way out.
            if segment == "." || segment == ".." { return .failure(.outsideDirectory) }
            segments.append(segment)
        }
        if path.last == "/" { segments.append("index.html") }
        return .success(segments.joined(separator: "/"))
    }

    /// The bytes of a percent-encoded segment; nil for a `%` not followed by two hex digits.
    private static func percentDecoded(_ segment: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The `Content-Type` of a file, by its extension; what the chat page needs, everything else is opaque bytes.
    static func contentType(forPath path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
        case "png": return "image/png"
        case "svg": return "image/svg+xml"
        case "ico": return "image/x-icon"
        case "txt": return "text/plain; charset=utf-8"
        case "wasm": return "application/wasm"
        default: return "application/octet-stream"
        }
    }
}
