import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("ConnectionStateMachine")
struct ConnectionStateMachineTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    @Test("keepalive expires at 1.5 times the keepalive, not before")
    func keepaliveExpiresAtOneAndAHalfTimes() {
        var machine = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        #expect(machine.packetReceived(.connect, now: start) == .process)
        machine.connectAccepted(keepAliveSeconds: 10, now: start)
        #expect(machine.nextDeadline == start + .seconds(15))

        #expect(machine.timerFired(now: start + .milliseconds(14_999)) == .rearm(at: start + .seconds(15)))
        #expect(machine.isConnected)
        #expect(machine.timerFired(now: start + .seconds(15)) == .close(.keepaliveExpired))
        #expect(!machine.isOpen)
    }

    @Test("any packet restarts the keepalive period")
    func activityPostponesExpiry() {
        var machine = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        _ = machine.packetReceived(.connect, now: start)
        machine.connectAccepted(keepAliveSeconds: 2, now: start)
        #expect(machine.packetReceived(.pingreq, now: start + .seconds(2)) == .process)
        // The timer set for the old deadline fires and is re-armed for the new one.
        #expect(machine.timerFired(now: start + .seconds(3)) == .rearm(at: start + .seconds(5)))
        #expect(machine.timerFired(now: start + .seconds(5)) == .close(.keepaliveExpired))
    }

    @Test("keepalive 0 disables the timer")
    func zeroKeepaliveNeverExpires() {
        var machine = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        _ = machine.packetReceived(.connect, now: start)
        machine.connectAccepted(keepAliveSeconds: 0, now: start)
        #expect(machine.nextDeadline == nil)
        #expect(machine.timerFired(now: start + .hours(100)) == .stop)
        #expect(machine.isConnected)
    }

    @Test("no CONNECT within the connect timeout closes the connection")
    func connectTimeout() {
        var machine = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        #expect(machine.nextDeadline == start + .seconds(10))
        #expect(machine.timerFired(now: start + .seconds(9)) == .rearm(at: start + .seconds(10)))
        #expect(machine.timerFired(now: start + .seconds(10)) == .close(.connectTimeout))
        #expect(machine.packetReceived(.connect, now: start + .seconds(11)) == .ignore)
    }

    @Test("the first packet must be CONNECT and a second CONNECT is a violation")
    func packetOrder() {
        var first = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        #expect(first.packetReceived(.publish, now: start) == .close(.protocolViolation(.firstPacketNotConnect(.publish))))

        var second = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        _ = second.packetReceived(.connect, now: start)
        second.connectAccepted(keepAliveSeconds: 60, now: start)
        #expect(second.packetReceived(.connect, now: start) == .close(.protocolViolation(.secondConnect)))
        #expect(second.packetReceived(.suback, now: start) == .close(.protocolViolation(.serverOnlyPacket(.suback))))
    }

    @Test("after close, packets and timers are ignored")
    func closedIgnoresEverything() {
        var machine = ConnectionStateMachine(acceptedAt: start, connectTimeout: .seconds(10))
        _ = machine.packetReceived(.connect, now: start)
        machine.connectAccepted(keepAliveSeconds: 1, now: start)
        let firstClose = machine.close()
        let secondClose = machine.close()
        #expect(firstClose && !secondClose)
        #expect(machine.packetReceived(.publish, now: start) == .ignore)
        #expect(machine.timerFired(now: start + .hours(1)) == .stop)
    }
}
