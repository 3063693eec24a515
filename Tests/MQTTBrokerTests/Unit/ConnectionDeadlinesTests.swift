import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// The core's single timer for all connection deadlines (``DeadlineHeap`` and BrokerCore+Deadlines.swift), and the
/// compact receive-buffer sizing: the two per-connection costs that moved out of NIO's per-channel objects.
@Suite("Connection deadlines and receive buffers")
struct ConnectionDeadlinesTests {
    @Test("the heap pops deadlines in order and only those due")
    func heapOrder() {
        var heap = DeadlineHeap<Int>()
        var generator = SystemRandomNumberGenerator()
        let start = NIODeadline.uptimeNanoseconds(1_000_000)
        var inserted: [Int64] = []
        for id in 0..<300 {
            let offset = Int64.random(in: 0..<10_000, using: &generator)
            inserted.append(offset)
            heap.insert(id, at: start + .milliseconds(offset))
        }
        #expect(heap.count == 300)
        let cut = start + .milliseconds(5_000)
        var popped: [NIODeadline] = []
        while let entry = heap.popDue(now: cut) {
            popped.append(entry.deadline)
        }
        #expect(popped == popped.sorted())
        #expect(popped.count == inserted.filter { $0 <= 5_000 }.count)
        #expect(heap.earliest.map { $0 > cut } ?? true)
        while let entry = heap.popDue(now: start + .hours(1)) {
            popped.append(entry.deadline)
        }
        #expect(popped.count == 300)
        #expect(popped == popped.sorted())
        #expect(heap.popDue(now: start + .hours(2)) == nil)
    }

    @Test("a later connection with a shorter keepalive re-arms the core's timer earlier")
    func shorterDeadlineArrivesLater() throws {
        let broker = EmbeddedBroker()
        let (slow, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 60, clientIdentifier: "slow"))
        let (fast, _) = try broker.connect(ConnectPacket(keepAliveSeconds: 2, clientIdentifier: "fast"))
        broker.advance(by: .milliseconds(2_999))
        #expect(fast.isActive)
        broker.advance(by: .milliseconds(1))
        #expect(!fast.isActive)
        #expect(slow.isActive)
        broker.advance(by: .milliseconds(90_000 - 3_000 - 1))
        #expect(slow.isActive)
        broker.advance(by: .milliseconds(1))
        #expect(!slow.isActive)
    }

    @Test("CONNECT replaces the connect-timeout deadline; the stale entry closes nothing")
    func staleConnectDeadline() throws {
        let broker = EmbeddedBroker { $0.connectTimeout = .seconds(10) }
        let client = try broker.accept()
        broker.advance(by: .seconds(5))
        try client.send(.connect(ConnectPacket(keepAliveSeconds: 8, clientIdentifier: "late")))
        #expect(try client.received().count == 1)  // CONNACK
        broker.advance(by: .seconds(6))  // t = 11 s: past the stale connect deadline (10 s)
        #expect(client.isActive)
        try client.send(.pingreq(PingReqPacket()))  // t = 11 s: keepalive deadline moves to 23 s
        #expect(try client.received() == [.pingresp(PingRespPacket())])
        broker.advance(by: .milliseconds(11_999))
        #expect(client.isActive)
        broker.advance(by: .milliseconds(1))
        #expect(!client.isActive)
    }

    @Test("hundreds of connections with mixed keepalives each close at 1.5 times their own")
    func manyConnections() throws {
        let broker = EmbeddedBroker()
        var clients: [(EmbeddedClient, UInt16)] = []
        for index in 0..<200 {
            let keepalive = UInt16(1 + index % 7)
            let (client, connack) = try broker.connect(ConnectPacket(keepAliveSeconds: keepalive, clientIdentifier: "c\(index)"))
            #expect(connack?.returnCode == .accepted)
            clients.append((client, keepalive))
        }
        var elapsed = 0
        for keepalive in UInt16(1)...7 {
            let due = Int(keepalive) * 1500
            broker.advance(by: .milliseconds(Int64(due - 1 - elapsed)))
            #expect(clients.filter { $0.1 >= keepalive }.allSatisfy { $0.0.isActive })
            broker.advance(by: .milliseconds(1))
            elapsed = due
            #expect(clients.filter { $0.1 <= keepalive }.allSatisfy { !$0.0.isActive })
            #expect(clients.filter { $0.1 > keepalive }.allSatisfy { $0.0.isActive })
        }
    }

    @Test("receive buffers grow four-fold per full read, shrink by half after two half-empty reads, within bounds")
    func receiveBufferSizing() {
        var sizing = ReceiveBufferSizing(minimum: 64, initial: 64, maximum: 65536)
        func record(_ bytes: Int) -> Bool { sizing.record(actualReadBytes: bytes) }
        #expect(sizing.nextBufferSize() == 64)
        #expect(sizing.buffer(allocator: ByteBufferAllocator()).capacity >= 64)
        #expect(!record(30))  // at the minimum: no shrinking
        #expect(sizing.nextBufferSize() == 64)
        #expect(record(64))
        #expect(sizing.nextBufferSize() == 256)
        for expected in [1024, 4096, 16384, 65536] {
            #expect(record(sizing.currentSize))
            #expect(sizing.nextBufferSize() == expected)
        }
        #expect(!record(65536))  // at the maximum
        #expect(sizing.nextBufferSize() == 65536)
        #expect(!record(100))
        #expect(sizing.nextBufferSize() == 65536)  // one small read is not enough
        #expect(!record(100))
        #expect(sizing.nextBufferSize() == 32768)
        #expect(!record(20_000))  // more than half: the streak is broken
        #expect(!record(100))
        #expect(sizing.nextBufferSize() == 32768)
        #expect(MemoryLayout<ReceiveBufferSizing>.size <= 3 * MemoryLayout<Int>.size)  // fits an existential inline
    }
}
