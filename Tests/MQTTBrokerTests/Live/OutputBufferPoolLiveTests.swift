import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("Output buffer pool (live)")
struct OutputBufferPoolLiveTests {
    /// Where the core's spare output buffers' bytes are, read without taking them out of the pool.
    private func spareStorage(of server: MQTTBrokerServer) async throws -> [UInt] {
        try await server.withCore { $0.spareOutputStorageAddresses } ?? []
    }

    @Test("a buffer written to a real socket comes back to the pool with its storage: no new buffer per flush")
    func storageSurvivesSocketWrites() async throws {
        // One loop: the sockets sit in the core's own pipelines (the path whose flush recycles the buffer).
        try await withLiveBroker(loops: 1, { $0.parkIdleConnectionsAfter = nil }) { server, address in
            let (subscriber, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "sub"))
            _ = try await subscriber.subscribe("pool/t", qos: .atMostOnce)
            let (publisher, _) = try await LiveClient.connect(to: address, ConnectPacket(keepAliveSeconds: 0, clientIdentifier: "pub"))
            // QoS 0: only the subscriber's connection writes, so the pool cycles one buffer.
            try await publisher.send(.publish(PublishPacket(topic: "pool/t", payload: ByteBuffer(string: "first"))))
            #expect(String(buffer: try await subscriber.nextPublish().payload) == "first")
            let before = try await spareStorage(of: server)
            #expect(before.count == 1)
            for round in 0..<3 {
                try await publisher.send(.publish(PublishPacket(topic: "pool/t", payload: ByteBuffer(string: "m\(round)"))))
                #expect(String(buffer: try await subscriber.nextPublish().payload) == "m\(round)")
                #expect(try await spareStorage(of: server) == before, "round \(round)")
            }
            await publisher.close()
            await subscriber.close()
        }
    }
}
