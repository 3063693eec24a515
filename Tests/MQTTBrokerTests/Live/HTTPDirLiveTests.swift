import Foundation
import LiveTestSupport
import NIOCore
import Testing

@testable import MQTTBroker

/// `http_dir` on a real socket: the files of the directory and nothing else, whatever the request target says.
@Suite("http_dir static files", .timeLimit(.minutes(1)))
struct HTTPDirLiveTests {
    /// A served directory (index.html, app.js, sub/index.html) beside a secret file and a symlink pointing at it.
    private func withServedDirectory<T>(_ body: (_ web: URL, _ address: SocketAddress) async throws -> T) async throws -> T {
        let root = try makeTemporaryDirectory(prefix: "http-dir")
        defer { try? FileManager.default.removeItem(at: root) }
        let web = root.appendingPathComponent("web")
        try FileManager.default.createDirectory(at: web.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("<h1>chat</h1>\n".utf8).write(to: web.appendingPathComponent("index.html"))
        try Data("console.log(1)\n".utf8).write(to: web.appendingPathComponent("app.js"))
        try Data("sub page\n".utf8).write(to: web.appendingPathComponent("sub/index.html"))
        try Data("top secret\n".utf8).write(to: root.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: web.appendingPathComponent("leak.txt").path, withDestinationPath: root.appendingPathComponent("secret.txt").path)
        try FileManager.default.createSymbolicLink(atPath: web.appendingPathComponent("up").path, withDestinationPath: root.path)
        return try await withWebSocketBroker(httpDirectory: web.path) { _, address in try await body(web, address) }
    }

    private func get(_ target: String, _ address: SocketAddress, method: String = "GET") async throws -> HTTPTestResponse {
        try await HTTPTestResponse.fetch("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", from: address)
    }

    @Test("GET serves files with their content type; / is index.html; a directory redirects to its slash")
    func serves() async throws {
        try await withServedDirectory { _, address in
            let index = try await get("/?room=lobby&name=ann", address)
            #expect(index.status == 200)
            #expect(index.headers["content-type"] == "text/html; charset=utf-8")
            #expect(index.headers["content-length"] == "14")
            #expect(String(decoding: index.body, as: UTF8.self) == "<h1>chat</h1>\n")
            let script = try await get("/app.js", address)
            #expect(script.status == 200 && script.headers["content-type"] == "text/javascript; charset=utf-8")
            #expect(try await get("/sub/", address).body == Array("sub page\n".utf8))
            let directory = try await get("/sub?x=1", address)
            #expect(directory.status == 301 && directory.headers["location"] == "/sub/?x=1")
        }
    }

    @Test("HEAD has the headers without the body; other methods get 405; missing files 404")
    func methodsAndMissing() async throws {
        try await withServedDirectory { _, address in
            let head = try await get("/", address, method: "HEAD")
            #expect(head.status == 200 && head.headers["content-length"] == "14" && head.body.isEmpty)
            let post = try await HTTPTestResponse.fetch(
                "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc", from: address)
            #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
            #expect(try await get("/missing.html", address).status == 404)
        }
    }

    @Test("no way out of the directory: dot segments in any spelling, encoded slashes, symlinks", arguments: [
        "/../secret.txt", "/sub/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/.%2e/secret.txt",
        "/..%2fsecret.txt", "/sub%2f..%2f..%2fsecret.txt", "/%2fetc%2fpasswd", "/..%5csecret.txt", "/./index.html",
        "/leak.txt", "/up/secret.txt",
    ])
    func noEscape(target: String) async throws {
        try await withServedDirectory { _, address in
            let response = try await get(target, address)
            #expect(response.status == 403, "\(target) answered \(response.status)")
            #expect(!String(decoding: response.body, as: UTF8.self).contains("top secret"))
        }
    }

    @Test("absolute paths stay inside; malformed targets get 400")
    func oddTargets() async throws {
        try await withServedDirectory { _, address in
            let absolute = try await get("//etc/passwd", address)  // web/etc/passwd
            let absoluteForm = try await get("http://127.0.0.1/index.html", address)
            let badEncoding = try await get("/%zz", address)
            #expect(absolute.status == 404)
            #expect(absoluteForm.status == 400)
            #expect(badEncoding.status == 400)
        }
    }

    @Test("without http_dir every plain request gets 404")
    func noDirectory() async throws {
        try await withWebSocketBroker { _, address in
            let root = try await get("/", address)
            let file = try await get("/index.html", address)
            #expect(root.status == 404 && file.status == 404)
        }
    }

    @Test("keep-alive serves request after request; a connection idle for connect_timeout is closed")
    func keepAliveAndIdle() async throws {
        try await withWebSocketBroker({ $0.connectTimeout = .seconds(1) }) { _, address in
            let connection = try await RawConnection.open(to: address)
            let request = Array("HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            // The idle timer runs from the connection's last activity, which is after this send, so the close
            // can come no sooner than connect_timeout after it, however late this task is scheduled.
            let sent = ContinuousClock.now
            try await connection.send(request + request)  // pipelined: answered in order
            let answered = try await poll(every: .milliseconds(10), for: .seconds(5)) {
                String(decoding: try await connection.received(), as: UTF8.self)
                    .components(separatedBy: "HTTP/1.1 404").count == 3
            }
            #expect(answered)
            #expect(await connection.closedByBroker(within: .seconds(5)))
            #expect(ContinuousClock.now - sent > .milliseconds(900))
            await connection.close()

            let silent = try await RawConnection.open(to: address)  // never sends a byte
            #expect(await silent.closedByBroker(within: .seconds(5)))
            await silent.close()
        }
    }

    @Test("request targets map to paths inside the directory or are refused")
    func pathRules() {
        #expect(StaticFilePath.relativePath(forTarget: "/") == .success("index.html"))
        #expect(StaticFilePath.relativePath(forTarget: "/a/b.js?x#y") == .success("a/b.js"))
        #expect(StaticFilePath.relativePath(forTarget: "/a%20b.txt") == .success("a b.txt"))
        #expect(StaticFilePath.relativePath(forTarget: "/a/") == .success("a/index.html"))
        #expect(StaticFilePath.relativePath(forTarget: "/a/..") == .failure(.outsideDirectory))
        #expect(StaticFilePath.relativePath(forTarget: "/a%00.txt") == .failure(.outsideDirectory))
        #expect(StaticFilePath.relativePath(forTarget: "*") == .failure(.malformed))
        #expect(StaticFilePath.relativePath(forTarget: "/%ff") == .failure(.malformed))
        #expect(StaticFilePath.contentType(forPath: "x/app.MJS") == "text/javascript; charset=utf-8")
        #expect(StaticFilePath.contentType(forPath: "m.wasm") == "application/wasm")
        #expect(StaticFilePath.contentType(forPath: ".htaccess") == "application/octet-stream")
        #expect(StaticFilePath.contentType(forPath: "README") == "application/octet-stream")
    }
}

@Suite("WebSocket listener shutdown", .timeLimit(.minutes(1)))
struct WebSocketShutdownLiveTests {
    @Test("shutdown closes connections still speaking HTTP, as it closes MQTT ones")
    func closesHTTPPhase() async throws {
        var configuration = BrokerConfiguration()
        configuration.sysInterval = nil
        configuration.listeners = [.init(host: "127.0.0.1", port: 0, transportProtocol: .websockets)]
        let (server, addresses) = try await startInProcessBroker(configuration, logger: brokerTestLogger)
        let idle = try await RawConnection.open(to: addresses[0])  // connected, never sends a request
        let upgraded = try await RawWebSocket.open(to: addresses[0])
        await server.shutdown()
        #expect(await idle.closedByBroker(within: .seconds(2)))
        #expect(try await upgraded.nextFrame().closeCode == 1000)  // closed by the core, with a close frame
        #expect(await upgraded.connection.closedByBroker(within: .seconds(2)))
        await idle.close()
        await upgraded.close()
    }
}
