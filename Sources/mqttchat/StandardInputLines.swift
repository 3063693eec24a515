import Foundation

/// The lines of stdin as an async stream, read on a dedicated thread so that a blocking read never
/// occupies one of Swift concurrency's few cooperative threads. The stream ends at EOF.
enum StandardInputLines {
    /// Starts reading; every call starts another reader, so call it once per process.
    static func stream() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let reader = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line)
            }
            continuation.finish()
        }
        reader.name = "mqttchat-stdin"
        reader.start()
        return stream
    }
}
