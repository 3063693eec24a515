import Foundation

/// Errors of the test harness itself (not of the code under test).
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A new empty directory under the system's temporary directory.
public func makeTemporaryDirectory(prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Runs a command to completion and returns its output; throws on a non-zero exit, or if it still runs after
/// `timeout` (it is then stopped, as by ``runProcess(_:_:timeout:)``).
@discardableResult
public func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws -> String {
    let result = try await runProcess(executable, arguments, timeout: timeout)
    guard result.status == 0 else {
        throw HarnessError("\(executable) \(arguments.joined(separator: " ")) failed: \(result.output)")
    }
    return result.output
}

/// Runs blocking work on a thread of its own, so the (2-thread) cooperative pool keeps serving the other tests.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try work()) } catch { continuation.resume(throwing: error) }
        }
        thread.start()
    }
}

/// Output (standard output and standard error together) and exit status of a finished process.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var output: String
}

/// Runs an executable with arguments, killing it if it still runs after `timeout`. The wait sleeps
/// rather than blocks, so the (2-thread) cooperative pool keeps serving the other tests.
public func runProcess(_ path: String, _ arguments: [String], timeout: Duration = .seconds(15)) async throws -> ProcessResult {
    // A file, not a pipe: a pipe's buffer fills up and blocks a chatty process until it is read.
    let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("broker-test-\(UUID().uuidString).out")
    defer { try? FileManager.default.removeItem(at: outputURL) }
    let process = try SpawnedProcess(path, arguments, outputPath: outputURL.path)
    // SIGKILL after the timeout: a wait for a process that ignores SIGTERM would never end.
    let status = await process.waitForExit(timeout: timeout)
    let data = (try? Data(contentsOf: outputURL)) ?? Data()
    return ProcessResult(status: status, output: String(decoding: data, as: UTF8.self))
}

/// The installed mosquitto broker, if any.
public var mosquittoBinary: String? {
    ["/usr/sbin/mosquitto", "/usr/bin/mosquitto", "/usr/local/sbin/mosquitto"]
        .first(where: FileManager.default.isExecutableFile(atPath:))
}
