import Foundation
import LiveTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP response, read to the end of the connection.
struct ScrapedHTTPResponse {
    var status: Int
    /// Header fields by lower-cased name.
    var headers: [String: String]
    var body: String

    /// The samples of a Prometheus text exposition body, by series (`name` or `name{label="value"}`).
    var samples: [String: Double] {
        var samples: [String: Double] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    /// The `# TYPE` of each metric family in the body.
    var types: [String: String] {
        var types: [String: String] = [:]
        for line in body.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let words = line.split(separator: " ")
            if words.count == 4 { types[String(words[2])] = String(words[3]) }
        }
        return types
    }
}

/// Sends `method path` over HTTP/1.1 to 127.0.0.1:`port` with `Connection: close` and reads the whole response
/// (blocking reads on a thread of their own, each bounded by a 5 s receive timeout).
func httpRequest(_ method: String, _ path: String, port: Int) async throws -> ScrapedHTTPResponse {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try blockingHTTPRequest(method, path, port: port) })
        }
    }
}

private func blockingHTTPRequest(_ method: String, _ path: String, port: Int) throws -> ScrapedHTTPResponse {
    let fd = try connectedSocket(port: port)
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let request = Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
        throw HarnessError("could not send the HTTP request, errno \(errno)")
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw HarnessError("HTTP response not read to its end, errno \(errno)") }
        if count == 0 { break }
        received += chunk[0..<count]
    }
    let text = String(decoding: received, as: UTF8.self)
    guard let end = text.range(of: "\r\n\r\n") else { throw HarnessError("no HTTP header in: \(text)") }
    let headLines = text[..<end.lowerBound].components(separatedBy: "\r\n")
    let statusWords = headLines.first?.split(separator: " ") ?? []
    guard statusWords.count >= 2, let status = Int(statusWords[1]) else { throw HarnessError("bad status line: \(text)") }
    var headers: [String: String] = [:]
    for line in headLines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return ScrapedHTTPResponse(status: status, headers: headers, body: String(text[end.upperBound...]))
}
