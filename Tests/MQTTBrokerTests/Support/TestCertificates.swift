import Foundation
import LiveTestSupport

/// A throwaway PKI made by `scripts/make-test-certs.sh` in a temp directory: `ca.crt`, `server.crt`/`server.key`
/// (for 127.0.0.1 and localhost) and one `NAME.crt`/`NAME.key` per client. Call ``remove()`` when done.
struct TestCertificates: Sendable {
    let directory: URL

    /// The path of `name` in the directory (`"ca.crt"`, `"alice.key"`, ...).
    func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// Runs the script; `caName` names the CA (to make a second, foreign one).
    static func make(clients: [String] = [], caName: String = "mqttchat test CA") async throws -> TestCertificates {
        let directory = try makeTemporaryDirectory(prefix: "broker-tls")
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/make-test-certs.sh")
        let result = try await runProcess(
            "/usr/bin/env", ["CA_NAME=\(caName)", "sh", script.path, directory.path] + clients, timeout: .seconds(60))
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: directory)
            throw TestCertificatesError(output: result.output)
        }
        return TestCertificates(directory: directory)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `scripts/make-test-certs.sh` failed.
struct TestCertificatesError: Error, CustomStringConvertible {
    let output: String
    var description: String { "make-test-certs.sh failed: \(output)" }
}
