import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// How many CPU cores this process may run on.
///
/// `System.coreCount` honours cgroup quotas and cpusets but not the process's own affinity mask, so a broker started
/// with `taskset -c 0` would still spread its sockets over one event loop per machine core and pay a cross-thread
/// hand-off per read batch on the one core it has. `threads auto` (``BrokerConfiguration/eventLoopCount``) uses this
/// count instead: the smaller of the two.
enum AvailableCores {
    /// The cores in the affinity mask, capped by `System.coreCount`; `System.coreCount` where the mask is unknown.
    static var count: Int {
        let systemCount = System.coreCount
        guard let allowed = readProcStatus().flatMap(allowedCPUCount(statusText:)), allowed > 0 else { return systemCount }
        return min(systemCount, allowed)
    }

    /// The number of CPUs in the `Cpus_allowed_list:` line of a `/proc/PID/status` text ("0-1,4" is 3), or nil
    /// when the line is missing or malformed.
    static func allowedCPUCount(statusText: String) -> Int? {
        guard let line = statusText.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else {
            return nil
        }
        let list = line.dropFirst("Cpus_allowed_list:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" })
        var count = 0
        for range in list.split(separator: ",") {
            let bounds = range.split(separator: "-")
            switch bounds.count {
            case 1:
                guard Int(bounds[0]) != nil else { return nil }
                count += 1
            case 2:
                guard let low = Int(bounds[0]), let high = Int(bounds[1]), high >= low else { return nil }
                count += high - low + 1
            default:
                return nil
            }
        }
        return count
    }

    private static func readProcStatus() -> String? {
        #if os(Linux)
        guard let file = fopen("/proc/self/status", "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let read = fread(&chunk, 1, chunk.count, file)
            guard read > 0 else { break }
            bytes.append(contentsOf: chunk[0..<read])
        }
        return String(decoding: bytes, as: UTF8.self)
        #else
        return nil
        #endif
    }
}
