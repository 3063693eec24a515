import Foundation

/// Reads a process's resident set size from `/proc/PID/status` (Linux).
public enum BrokerMemory {
    /// The `VmRSS` of `pid` in KiB.
    public static func residentKiB(pid: Int32) throws(LoadGenError) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw .brokerMemoryUnreadable(pid: pid)
        }
        return try residentKiB(parsingStatus: status, pid: pid)
    }

    /// Extracts `VmRSS` (KiB) from the text of a `/proc/PID/status` file.
    public static func residentKiB(parsingStatus status: String, pid: Int32) throws(LoadGenError) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.dropFirst("VmRSS:".count).split(whereSeparator: { $0 == " " || $0 == "\t" })
            if let first = fields.first, let value = Int(first) { return value }
        }
        throw .brokerMemoryUnreadable(pid: pid)
    }
}
