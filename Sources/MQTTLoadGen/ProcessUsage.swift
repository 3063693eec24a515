import Foundation

/// A process's CPU time and read/write system calls at one moment, from `/proc/PID/stat` and `/proc/PID/io` (Linux).
/// Two samples around a run give what the broker spent on it: throughput alone cannot tell a broker that is slow
/// from one that waits on its clients, CPU time per message can.
public struct ProcessUsageSample: Sendable, Hashable {
    /// CPU time in user mode, all threads, seconds (`utime`, clock-tick resolution).
    public var userSeconds: Double
    /// CPU time in the kernel on the process's behalf, all threads, seconds (`stime`).
    public var systemSeconds: Double
    /// `read`-family system calls so far (`syscr`); nil when `/proc/PID/io` is not readable to us.
    public var readSyscalls: Int?
    /// `write`-family system calls so far (`syscw`); nil when `/proc/PID/io` is not readable to us.
    public var writeSyscalls: Int?

    /// A sample with these figures.
    public init(userSeconds: Double, systemSeconds: Double, readSyscalls: Int?, writeSyscalls: Int?) {
        self.userSeconds = userSeconds
        self.systemSeconds = systemSeconds
        self.readSyscalls = readSyscalls
        self.writeSyscalls = writeSyscalls
    }

    /// Samples `pid` now.
    public static func read(pid: Int32) throws(LoadGenError) -> ProcessUsageSample {
        // Read as `BrokerMemory` reads `/proc/PID/status`.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            throw .brokerUsageUnreadable(pid: pid)
        }
        let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)
        return try parse(stat: stat, io: io, ticksPerSecond: Int(sysconf(Int32(_SC_CLK_TCK))), pid: pid)
    }

    /// Builds a sample from the text of `/proc/PID/stat` and, if readable, `/proc/PID/io`.
    public static func parse(stat: String, io: String?, ticksPerSecond: Int, pid: Int32) throws(LoadGenError)
        -> ProcessUsageSample
    {
        // The command name (field 2) is in parentheses and may hold spaces or parentheses: count fields after the
        // last ')'. Field 3 (state) is then the first, utime (14) the twelfth and stime (15) the thirteenth.
        guard ticksPerSecond > 0, let close = stat.lastIndex(of: ")") else { throw .brokerUsageUnreadable(pid: pid) }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let userTicks = Int(fields[11]), let systemTicks = Int(fields[12]) else {
            throw .brokerUsageUnreadable(pid: pid)
        }
        var sample = ProcessUsageSample(
            userSeconds: Double(userTicks) / Double(ticksPerSecond),
            systemSeconds: Double(systemTicks) / Double(ticksPerSecond),
            readSyscalls: nil, writeSyscalls: nil)
        for line in io?.split(separator: "\n") ?? [] {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let value = Int(parts[1].drop(while: { $0 == " " })) else { continue }
            switch parts[0] {
            case "syscr": sample.readSyscalls = value
            case "syscw": sample.writeSyscalls = value
            default: continue
            }
        }
        return sample
    }
}

extension LoadGenResult.ProcessUsage {
    /// What the broker spent between `before` and `after`, `wallSeconds` apart, while `delivered` messages reached
    /// the subscribers.
    public init(from before: ProcessUsageSample, to after: ProcessUsageSample, wallSeconds: Double, delivered: Int) {
        let user = max(0, after.userSeconds - before.userSeconds)
        let system = max(0, after.systemSeconds - before.systemSeconds)
        func difference(_ a: Int?, _ b: Int?) -> Int? {
            guard let a, let b else { return nil }
            return max(0, b - a)
        }
        let reads = difference(before.readSyscalls, after.readSyscalls)
        let writes = difference(before.writeSyscalls, after.writeSyscalls)
        var syscallsPerDelivery: Double?
        if let reads, let writes, delivered > 0 { syscallsPerDelivery = Double(reads + writes) / Double(delivered) }
        self.init(
            wallSeconds: wallSeconds, userSeconds: user, systemSeconds: system, readSyscalls: reads,
            writeSyscalls: writes,
            busyFraction: wallSeconds > 0 ? (user + system) / wallSeconds : 0,
            cpuMicrosPerDelivery: delivered > 0 ? (user + system) * 1e6 / Double(delivered) : nil,
            syscallsPerDelivery: syscallsPerDelivery)
    }
}
