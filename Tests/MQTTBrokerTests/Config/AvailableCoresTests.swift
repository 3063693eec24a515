import NIOCore
import Testing

@testable import MQTTBroker

@Suite("AvailableCores")
struct AvailableCoresTests {
    @Test("Cpus_allowed_list is counted: single CPUs, ranges and lists; malformed lines give nil")
    func parsesAllowedList() {
        #expect(AvailableCores.allowedCPUCount(statusText: "Name:\tx\nCpus_allowed_list:\t0\n") == 1)
        #expect(AvailableCores.allowedCPUCount(statusText: "Cpus_allowed_list:\t0-1\n") == 2)
        #expect(AvailableCores.allowedCPUCount(statusText: "Cpus_allowed_list:\t0-3,8,10-11\n") == 7)
        #expect(AvailableCores.allowedCPUCount(statusText: "Cpus_allowed_list:\t3-1\n") == nil)
        #expect(AvailableCores.allowedCPUCount(statusText: "Cpus_allowed_list:\tx\n") == nil)
        #expect(AvailableCores.allowedCPUCount(statusText: "Name:\tx\n") == nil)
    }

    @Test("the live count is between 1 and the machine's core count")
    func liveCount() {
        #expect((1...System.coreCount).contains(AvailableCores.count))
    }
}
