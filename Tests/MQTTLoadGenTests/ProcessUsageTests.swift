import MQTTLoadGen
import Testing

@Suite("Broker CPU time and system calls from /proc")
struct ProcessUsageTests {
    /// A `/proc/PID/stat` line whose command name holds spaces and parentheses; utime 250, stime 125 ticks.
    static let stat = "4242 (odd (name) here) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 125 0 0 20 0 3 0 100 0 0"
    static let io = "rchar: 123\nwchar: 456\nsyscr: 700\nsyscw: 300\nread_bytes: 0\nwrite_bytes: 0\n"

    @Test("utime and stime are read after the command name, whatever it contains")
    func parsesStat() throws {
        let sample = try ProcessUsageSample.parse(stat: Self.stat, io: Self.io, ticksPerSecond: 100, pid: 4242)
        #expect(sample.userSeconds == 2.5)
        #expect(sample.systemSeconds == 1.25)
        #expect(sample.readSyscalls == 700)
        #expect(sample.writeSyscalls == 300)
    }

    @Test("an unreadable /proc/PID/io leaves the system calls unknown, not zero")
    func ioMissing() throws {
        let sample = try ProcessUsageSample.parse(stat: Self.stat, io: nil, ticksPerSecond: 100, pid: 4242)
        #expect(sample.userSeconds == 2.5)
        #expect(sample.readSyscalls == nil)
        #expect(sample.writeSyscalls == nil)
    }

    @Test("a truncated or garbled stat line is a typed error", arguments: [
        "", "4242 (name", "4242 (name) S 1 2 3", "4242 (name) S 1 2 3 4 5 6 7 8 9 10 x 125 0",
    ])
    func garbledStat(stat: String) {
        #expect(throws: LoadGenError.brokerUsageUnreadable(pid: 7)) {
            try ProcessUsageSample.parse(stat: stat, io: nil, ticksPerSecond: 100, pid: 7)
        }
    }

    @Test("usage over a run: CPU per delivered message, busy fraction and system calls per message")
    func usageOverRun() {
        let before = ProcessUsageSample(userSeconds: 1.0, systemSeconds: 0.5, readSyscalls: 100, writeSyscalls: 200)
        let after = ProcessUsageSample(userSeconds: 2.0, systemSeconds: 1.0, readSyscalls: 300, writeSyscalls: 600)
        let usage = LoadGenResult.ProcessUsage(from: before, to: after, wallSeconds: 2, delivered: 1_000)
        #expect(usage.userSeconds == 1.0)
        #expect(usage.systemSeconds == 0.5)
        #expect(usage.busyFraction == 0.75)
        #expect(usage.cpuMicrosPerDelivery == 1_500)
        #expect(usage.readSyscalls == 200)
        #expect(usage.writeSyscalls == 400)
        #expect(usage.syscallsPerDelivery == 0.6)
    }

    @Test("nothing delivered, or system calls unknown: no per-message figure rather than a wrong one")
    func noPerMessageFigure() {
        let before = ProcessUsageSample(userSeconds: 1.0, systemSeconds: 0.5, readSyscalls: nil, writeSyscalls: nil)
        let after = ProcessUsageSample(userSeconds: 1.5, systemSeconds: 0.5, readSyscalls: nil, writeSyscalls: nil)
        let idle = LoadGenResult.ProcessUsage(from: before, to: after, wallSeconds: 1, delivered: 0)
        #expect(idle.cpuMicrosPerDelivery == nil)
        #expect(idle.syscallsPerDelivery == nil)
        let unknownCalls = LoadGenResult.ProcessUsage(from: before, to: after, wallSeconds: 1, delivered: 10)
        #expect(unknownCalls.cpuMicrosPerDelivery == 50_000)
        #expect(unknownCalls.syscallsPerDelivery == nil)
    }
}
