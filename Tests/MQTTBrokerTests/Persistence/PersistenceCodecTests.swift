import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

@Suite("Persistence record codec")
struct PersistenceCodecTests {
    static let message = StoredMessage(
        id: 42, topic: "a/b", qos: .exactlyOnce, retain: true, payload: ByteBuffer(string: "payload"), mustRoute: true,
        origin: .init(clientID: "pub", packetID: 7))

    /// One record of every type.
    static let everyRecord: [PersistentRecord] = [
        .sessionCreated(clientID: "c1"),
        .sessionRemoved(clientID: "c1"),
        .subscribed(clientID: "c1", filter: "a/+/#", qos: .atLeastOnce),
        .unsubscribed(clientID: "c1", filter: "a/+/#"),
        .message(message),
        .message(StoredMessage(id: 43, topic: "t", qos: .atLeastOnce, retain: false, payload: ByteBuffer(), mustRoute: false, origin: nil)),
        .routed(storeID: 42, targets: [.init(clientID: "c1", qos: .atLeastOnce, retain: false), .init(clientID: "c2", qos: .exactlyOnce, retain: true)]),
        .routed(storeID: 43, targets: []),
        .outboundSent(clientID: "c2", packetID: 9, storeID: 42),
        .outboundReleased(clientID: "c2", packetID: 9),
        .outboundCompleted(clientID: "c2", packetID: 9),
        .outboundAcked(clientID: "c1", storeID: 42),
        .inboundReceived(clientID: "pub", packetID: 65535),
        .inboundReleased(clientID: "pub", packetID: 65535),
        .retained(topic: "r/ü", qos: .atMostOnce, payload: ByteBuffer(bytes: [0, 1, 2, 255])),
        .delivery(clientID: "c2", storeID: 42, qos: .exactlyOnce, retain: true, packetID: 9, state: .awaitingPubComp),
        .snapshotEnd(recordCount: 16),
    ]

    static func file(_ records: [PersistentRecord], kind: PersistenceFileFormat.FileKind = .log, generation: UInt64 = 3) -> ByteBuffer {
        var buffer = PersistenceFileFormat.header(kind: kind, generation: generation)
        for record in records { PersistenceFileFormat.appendRecord(record, to: &buffer) }
        return buffer
    }

    /// The offset where each record starts (after the header).
    static func recordOffsets(_ records: [PersistentRecord]) -> [Int] {
        var offsets: [Int] = []
        var buffer = PersistenceFileFormat.header(kind: .log, generation: 3)
        for record in records {
            offsets.append(buffer.readableBytes)
            PersistenceFileFormat.appendRecord(record, to: &buffer)
        }
        return offsets
    }

    @Test("every record type survives a round trip, and the header keeps the generation")
    func roundTrip() throws {
        let read = try PersistenceFileFormat.read(Self.file(Self.everyRecord), path: "log", kind: .log)
        #expect(read.records == Self.everyRecord)
        #expect(read.damage == nil)
        #expect(read.generation == 3)
    }

    @Test("the checksum is standard CRC-32 (zlib's)")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test("a log cut at every byte of its last record keeps the records before it and reports a torn tail")
    func truncatedTail() throws {
        let records = Array(Self.everyRecord.prefix(6))
        let full = Self.file(records)
        let lastStart = Self.recordOffsets(records)[5]
        for cut in lastStart..<full.readableBytes {
            let truncated = full.getSlice(at: 0, length: cut) ?? ByteBuffer()
            let read = try PersistenceFileFormat.read(truncated, path: "log", kind: .log)
            if cut == lastStart {
                #expect(read.records == Array(records.prefix(5)) && read.damage == nil, "cut at \(cut)")
                continue
            }
            #expect(read.records == Array(records.prefix(5)), "cut at \(cut)")
            #expect(read.damageIsTornTail, "cut at \(cut)")
            #expect(read.damage?.offset == lastStart, "cut at \(cut)")
            #expect(read.damage?.recordNumber == 6, "cut at \(cut)")
            #expect(read.damage?.discardedBytes == cut - lastStart, "cut at \(cut)")
            #expect(read.validLength == lastStart)
        }
    }

    @Test("a flipped byte in a middle record is reported with its record number and offset, not as a torn tail")
    func flippedMiddleByte() throws {
        let records = Array(Self.everyRecord.prefix(8))
        var file = Self.file(records)
        let offsets = Self.recordOffsets(records)
        let target = offsets[3] + 10  // inside record 4's body
        let byte = file.getInteger(at: target, as: UInt8.self) ?? 0
        file.setInteger(byte ^ 0x20, at: target)
        let read = try PersistenceFileFormat.read(file, path: "log", kind: .log)
        #expect(read.records == Array(records.prefix(3)))
        #expect(read.damage?.recordNumber == 4)
        #expect(read.damage?.offset == offsets[3])
        #expect(!read.damageIsTornTail)
        guard case .checksumMismatch = read.damage?.reason else {
            Issue.record("expected a checksum mismatch, got \(String(describing: read.damage))")
            return
        }
        let error = PersistenceError.damagedLog(path: "/d/mqttchat.log", damage: read.damage ?? PersistenceDamage(offset: 0, recordNumber: 0, reason: .invalidLength(0), discardedBytes: 0))
        #expect(error.description.contains("/d/mqttchat.log"))
        #expect(error.description.contains("record 4 at offset \(offsets[3])"))
    }

    @Test("a garbled last record that ends the file is a torn tail; zero bytes after the last record are too")
    func garbledTail() throws {
        let records = Array(Self.everyRecord.prefix(3))
        var file = Self.file(records)
        file.setInteger(UInt8(0xFF), at: file.writerIndex - 1)
        let read = try PersistenceFileFormat.read(file, path: "log", kind: .log)
        #expect(read.records.count == 2 && read.damageIsTornTail)

        var zeros = Self.file(records)
        zeros.writeBytes([UInt8](repeating: 0, count: 100))
        let zeroRead = try PersistenceFileFormat.read(zeros, path: "log", kind: .log)
        #expect(zeroRead.records == records && zeroRead.damageIsTornTail && zeroRead.damage?.discardedBytes == 100)
    }

    @Test("wrong magic, unknown version, wrong kind and a damaged header are clear errors")
    func headerErrors() {
        var badMagic = Self.file([])
        badMagic.setInteger(UInt8(ascii: "X"), at: 0)
        #expect(throws: PersistenceError.badMagic(path: "f")) { try PersistenceFileFormat.read(badMagic, path: "f", kind: .log) }

        var version = Self.file([])
        version.setInteger(UInt16(9), at: 8)
        #expect(throws: PersistenceError.unsupportedVersion(path: "f", found: 9, supported: PersistenceFileFormat.version)) {
            try PersistenceFileFormat.read(version, path: "f", kind: .log)
        }
        #expect(throws: PersistenceError.wrongFileKind(path: "f", expected: "snapshot")) {
            try PersistenceFileFormat.read(Self.file([]), path: "f", kind: .snapshot)
        }
        var generation = Self.file([])
        generation.setInteger(UInt8(1), at: 19)
        #expect(throws: PersistenceError.damagedHeader(path: "f", reason: "header checksum mismatch")) {
            try PersistenceFileFormat.read(generation, path: "f", kind: .log)
        }
        let short = Self.file([]).getSlice(at: 0, length: 12) ?? ByteBuffer()
        #expect(throws: PersistenceError.self) { try PersistenceFileFormat.read(short, path: "f", kind: .log) }
        #expect(PersistenceError.unsupportedVersion(path: "f", found: 9, supported: 1).description.contains("version 9"))
    }

    @Test("a valid checksum over an unknown record type is undecodable damage, not a torn tail")
    func unknownType() throws {
        var file = Self.file([.sessionCreated(clientID: "a")])
        var body = ByteBuffer(bytes: [200, 1, 2])
        file.writeInteger(UInt32(body.readableBytes))
        file.writeInteger(CRC32.checksum(body.readableBytesView))
        file.writeBuffer(&body)
        file.writeBytes(PersistenceCodecTests.file([.sessionCreated(clientID: "b")]).readableBytesView.dropFirst(PersistenceFileFormat.headerSize))
        let read = try PersistenceFileFormat.read(file, path: "log", kind: .log)
        #expect(read.records == [.sessionCreated(clientID: "a")])
        #expect(!read.damageIsTornTail)
        guard case .undecodable = read.damage?.reason else {
            Issue.record("expected undecodable, got \(String(describing: read.damage))")
            return
        }
    }
}

@Suite("Persistent state replay")
struct PersistentStateTests {
    @Test("routing, QoS 2 steps and acknowledgements rebuild each session's deliveries")
    func replay() {
        var state = PersistentState()
        let records: [PersistentRecord] = [
            .sessionCreated(clientID: "s1"),
            .sessionCreated(clientID: "s2"),
            .subscribed(clientID: "s1", filter: "t/#", qos: .exactlyOnce),
            .message(StoredMessage(id: 1, topic: "t/1", qos: .exactlyOnce, retain: false, payload: ByteBuffer(string: "one"), mustRoute: true, origin: .init(clientID: "s2", packetID: 5))),
            .routed(storeID: 1, targets: [.init(clientID: "s1", qos: .exactlyOnce, retain: false)]),
            .message(StoredMessage(id: 2, topic: "t/2", qos: .atLeastOnce, retain: false, payload: ByteBuffer(string: "two"), mustRoute: true, origin: nil)),
            .routed(storeID: 2, targets: [.init(clientID: "s1", qos: .atLeastOnce, retain: false)]),
            .message(StoredMessage(id: 3, topic: "t/3", qos: .exactlyOnce, retain: false, payload: ByteBuffer(string: "three"), mustRoute: true, origin: nil)),
            .routed(storeID: 3, targets: [.init(clientID: "s1", qos: .exactlyOnce, retain: false)]),
            .message(StoredMessage(id: 4, topic: "t/4", qos: .atLeastOnce, retain: false, payload: ByteBuffer(string: "four"), mustRoute: true, origin: nil)),
            .outboundSent(clientID: "s1", packetID: 10, storeID: 1),
            .outboundReleased(clientID: "s1", packetID: 10),
            .outboundAcked(clientID: "s1", storeID: 2),
            .outboundSent(clientID: "s1", packetID: 11, storeID: 3),
            .inboundReceived(clientID: "s2", packetID: 6),
            .inboundReleased(clientID: "s2", packetID: 5),
            .retained(topic: "r", qos: .atLeastOnce, payload: ByteBuffer(string: "kept")),
            .retained(topic: "gone", qos: .atLeastOnce, payload: ByteBuffer(string: "x")),
            .retained(topic: "gone", qos: .atLeastOnce, payload: ByteBuffer()),
        ]
        for record in records { state.apply(record) }
        state.pruneMessages()
        #expect(state.inconsistencies == 0)
        #expect(state.sessions["s2"]?.inboundQoS2 == [6])
        #expect(state.sessions["s1"]?.subscriptions == ["t/#": .exactlyOnce])
        #expect(
            state.sessions["s1"]?.deliveries == [
                .init(storeID: 1, qos: .exactlyOnce, retain: false, packetID: 10, state: .awaitingPubComp),
                .init(storeID: 3, qos: .exactlyOnce, retain: false, packetID: 11, state: .awaitingPubRec),
            ])
        #expect(state.pendingRoutes == [4])
        #expect(Set(state.messages.keys) == [3, 4])  // 1 waits for PUBCOMP only, 2 was acknowledged
        #expect(state.retained.keys.sorted() == ["r"])
        #expect(state.highestStoreID == 4)

        state.apply(.outboundCompleted(clientID: "s1", packetID: 10))
        state.apply(.sessionRemoved(clientID: "s2"))
        #expect(state.sessions["s1"]?.deliveries.count == 1 && state.sessions["s2"] == nil)
        state.apply(.subscribed(clientID: "nobody", filter: "x", qos: .atMostOnce))
        #expect(state.inconsistencies == 1)
    }
}
