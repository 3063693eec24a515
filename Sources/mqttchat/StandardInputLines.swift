import Foundation

/// The lines of stdin as an async stream, read on a dedicated thread so that a blocking read never
/// occupies one of Swift concurrency's few cooperative threads. The stream ends at EOF.
enum StandardInputLines {
    /// Starts reading; every call starts another reader, so call it once per process. The continuation lets
    /// others add lines too (e.g. a `/quit` on Ctrl-C).
    static func stream() -> (lines: AsyncStream<String>, continuation: AsyncStream<String>.Continuation) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let reader = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line)
            }
            continuation.finish()
        }
        reader.name = "mqttchat-stdin"
        reader.start()
        return (stream, continuation)
    }
}

/// Turns SIGINT and SIGTERM into a clean exit: the first one runs `onFirst` (e.g. "/quit"), a second one
/// ends the process at once with 128 + the signal number.
final class InterruptHandler {
    private let sources: [any DispatchSourceSignal]

    init(onFirst: @escaping @Sendable () -> Void) {
        let interrupted = Interrupted()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if interrupted.markFirst() { onFirst() } else { exit(128 + number) }
            }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}

/// Whether a signal arrived already.
private final class Interrupted: @unchecked Sendable {
    // @unchecked: `seen` is only touched while holding `lock`.
    private let lock = NSLock()
    private var seen = false

    /// Returns `true` for the first call only.
    func markFirst() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let first = !seen
        seen = true
        return first
    }
}
