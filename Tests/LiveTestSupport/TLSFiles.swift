import Foundation

/// A certificate authority and a server certificate for 127.0.0.1, made with the openssl CLI in a temp directory.
public struct TLSFiles: Sendable {
    /// Where the files are.
    public let directory: URL
    public var caCertificate: URL { directory.appendingPathComponent("ca.crt") }
    public var serverCertificate: URL { directory.appendingPathComponent("server.crt") }
    public var serverKey: URL { directory.appendingPathComponent("server.key") }

    /// Generates a CA (`name`) and, unless `caOnly`, a server certificate it signs for CN/SAN 127.0.0.1 + localhost.
    public static func generate(name: String = "mqttchat test CA", caOnly: Bool = false) async throws -> TLSFiles {
        let files = TLSFiles(directory: try makeTemporaryDirectory(prefix: "mqttclient-tls"))
        let dir = files.directory.path
        let openssl = "/usr/bin/openssl"
        try await run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                          "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.crt", "-subj", "/CN=\(name)"])
        guard !caOnly else { return files }
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: "\(dir)/san.ext", atomically: true, encoding: .utf8)
        try await run(openssl, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/server.key",
                          "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"])
        try await run(openssl, ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.crt",
                          "-CAkey", "\(dir)/ca.key", "-CAcreateserial", "-days", "2",
                          "-extfile", "\(dir)/san.ext", "-out", "\(dir)/server.crt"])
        return files
    }

    /// Makes a client certificate with CN `name`, signed by this CA; returns its certificate and key files.
    public func makeClientCertificate(name: String) async throws -> (certificate: URL, key: URL) {
        let dir = directory.path
        let openssl = "/usr/bin/openssl"
        try await run(openssl, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/\(name).key",
                          "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(name)"])
        try await run(openssl, ["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.crt",
                          "-CAkey", "\(dir)/ca.key", "-CAcreateserial", "-days", "2", "-out", "\(dir)/\(name).crt"])
        return (directory.appendingPathComponent("\(name).crt"), directory.appendingPathComponent("\(name).key"))
    }

    /// Deletes the directory and every file in it.
    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}
