import Foundation

/// Unbuffered writes to stdout and stderr.
///
/// Every line goes out with one `write(2)`, so output reaches a pipe at once (C stdio would hold it in a
/// block buffer when stdout is not a terminal) and lines from concurrent tasks never interleave mid-line.
enum Console {
    /// Writes `line` and a newline to stdout.
    static func line(_ line: String) {
        bytes(Array((line + "\n").utf8))
    }

    /// Writes raw bytes to stdout.
    static func bytes(_ bytes: [UInt8]) {
        try? FileHandle.standardOutput.write(contentsOf: Data(bytes))
    }

    /// Writes `line` and a newline to stderr.
    static func error(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}

/// Formats times for chat output in the local time zone.
enum ClockFormat {
    /// `HH:mm:ss`.
    static func time(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.hour, .minute, .second], from: date)
        return String(format: "%02d:%02d:%02d", parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0)
    }

    /// `yyyy-MM-dd HH:mm:ss`.
    static func dateTime(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d ", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0) + time(date)
    }

    /// ISO 8601 in UTC with milliseconds, for JSON.
    static func iso8601(milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        return date.formatted(style)
    }
}
