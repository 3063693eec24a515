import MQTTCore
import NIOCore
import Testing

@testable import MQTTBroker

/// A version-1 snapshot as the broker before format version 2 wrote it (generation 1): session "g1" subscribed to
/// "g/#" at QoS 1 holding queued message 5 ("hi" on "g/x"), and the retained message "r" on "g/r". Bytes written
/// independently of the encoder (Python's `zlib.crc32`), so they pin the version-1 layout.
let goldenVersion1Snapshot: [UInt8] = Array(
    hex: "4d51434850455253000101000000000000000001f4c230510000000583a4f79901000267310000000b13470b6f030002"
        + "67310003672f230100000015fc87e837050000000000000005010003672f780000000268690000001163ee41ec0e0002"
        + "67310000000000000005010000000000000ccafe00460d0003672f720000000001720000000949da2ff00f0000000000"
        + "000005")

/// The records of ``goldenVersion1Snapshot``.
let goldenVersion1Records: [PersistentRecord] = [
    .sessionCreated(clientID: "g1"),
    .subscribed(clientID: "g1", filter: "g/#", qos: .atLeastOnce),
    .message(StoredMessage(id: 5, topic: "g/x", qos: .atLeastOnce, retain: false, payload: ByteBuffer(string: "hi"), mustRoute: false, origin: nil)),
    .delivery(clientID: "g1", storeID: 5, qos: .atLeastOnce, retain: false, packetID: 0, state: .queued),
    .retained(topic: "g/r", qos: .atMostOnce, payload: ByteBuffer(string: "r")),
    .snapshotEnd(recordCount: 5),
]

extension Array where Element == UInt8 {
    /// Bytes from a hex string (test data only).
    init(hex: String) {
        var bytes: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble: UInt8 = character <= UInt8(ascii: "9") ? character - UInt8(ascii: "0") : character - UInt8(ascii: "a") + 10
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        self = bytes
    }
}

@Suite("Persistence format version 2")
struct PersistenceVersion2Tests {
    static let properties = MQTTProperties([
        .userProperty(key: "k", value: "v"), .contentType("text/plain"), .correlationData([1, 2, 3]),
        .responseTopic("reply/here"), .payloadFormatIndicator(1),
    ])

    /// One record of every version-2 addition.
    static let version2Records: [PersistentRecord] = [
        .sessionLifetime(clientID: "c5", protocolVersion: .v5, expiryInterval: 300),
        .sessionLifetime(clientID: "c4", protocolVersion: .v3_1_1, expiryInterval: .max),
        .subscriptionOptions(clientID: "c5", filter: "a/#", options: SubscriptionOptions(noLocal: true, retainAsPublished: false, identifier: 7)),
        .subscriptionOptions(clientID: "c5", filter: "b", options: SubscriptionOptions(noLocal: false, retainAsPublished: true, identifier: nil)),
        .subscriptionOptions(clientID: "c5", filter: "c", options: SubscriptionOptions(identifier: 268_435_455)),
        .message(
            StoredMessage(
                id: 9, topic: "a/b", qos: .exactlyOnce, retain: true, payload: ByteBuffer(string: "p"), mustRoute: true,
                origin: .init(clientID: "pub", packetID: 3), properties: properties, expiresAt: WallClockTime(milliseconds: 1_750_000_000_123))),
        .message(
            StoredMessage(
                id: 10, topic: "a/c", qos: .atLeastOnce, retain: false, payload: ByteBuffer(), mustRoute: false, origin: nil,
                expiresAt: WallClockTime(milliseconds: -5))),
        .message(
            StoredMessage(
                id: 11, topic: "a/d", qos: .atLeastOnce, retain: false, payload: ByteBuffer(string: "x"), mustRoute: false,
                origin: nil, properties: MQTTProperties([.userProperty(key: "only", value: "props")]))),
        .retained(topic: "r", qos: .atLeastOnce, payload: ByteBuffer(string: "kept"), properties: properties, expiresAt: WallClockTime(milliseconds: 42)),
        .retained(topic: "r2", qos: .exactlyOnce, payload: ByteBuffer(string: "kept"), expiresAt: WallClockTime(milliseconds: 43)),
    ]

    /// One record of every version-3 addition: delayed wills.
    static let version3Records: [PersistentRecord] = [
        .delayedWill(
            clientID: "c5",
            will: StoredWill(
                topic: "w/t", qos: .exactlyOnce, retain: true, payload: ByteBuffer(string: "gone"), properties: properties,
                expiresAt: WallClockTime(milliseconds: 1_750_000_009_000), publishAt: WallClockTime(milliseconds: 1_750_000_000_500))),
        .delayedWill(
            clientID: "c6",
            will: StoredWill(
                topic: "w/u", qos: .atMostOnce, retain: false, payload: ByteBuffer(), properties: .none, expiresAt: nil,
                publishAt: WallClockTime(milliseconds: 7))),
        .delayedWillCleared(clientID: "c5"),
    ]

    @Test("every version-2 and version-3 record survives a round trip, and files are written as version 3")
    func roundTrip() throws {
        let records = Self.version2Records + Self.version3Records + PersistenceCodecTests.everyRecord
        let file = PersistenceCodecTests.file(records)
        #expect(file.getInteger(at: 8, as: UInt16.self) == 3)
        let read = try PersistenceFileFormat.read(file, path: "log", kind: .log)
        #expect(read.damage == nil)
        #expect(read.version == 3)
        #expect(read.records == records)
    }

    @Test("a version-2 file holding a delayed will is damage: version 3 introduced it")
    func version2RefusesVersion3Records() throws {
        for record in Self.version3Records {
            var buffer = PersistenceFileFormat.header(kind: .log, generation: 0, version: 2)
            for record in [.sessionCreated(clientID: "c5"), record] { PersistenceFileFormat.appendRecord(record, to: &buffer) }
            let read = try PersistenceFileFormat.read(buffer, path: "log", kind: .log)
            #expect(read.records == [.sessionCreated(clientID: "c5")])
            #expect(read.damage?.recordNumber == 2)
        }
    }

    @Test("records without MQTT 5 fields keep their version-1 bytes; a golden version-1 snapshot reads as before")
    func version1Compatible() throws {
        var encoded = PersistenceFileFormat.header(kind: .snapshot, generation: 1, version: 1)
        for record in goldenVersion1Records { PersistenceFileFormat.appendRecord(record, to: &encoded) }
        #expect(Array(encoded.readableBytesView) == goldenVersion1Snapshot)
        let read = try PersistenceFileFormat.read(ByteBuffer(bytes: goldenVersion1Snapshot), path: "snapshot", kind: .snapshot)
        #expect(read.version == 1 && read.damage == nil && read.generation == 1)
        #expect(read.records == goldenVersion1Records)
    }

    @Test("a version-1 file holding a version-2 record or flag bit is damage, as is a version it does not know")
    func version1RefusesVersion2Fields() throws {
        func version1Log(_ records: [PersistentRecord]) -> ByteBuffer {
            var buffer = PersistenceFileFormat.header(kind: .log, generation: 0, version: 1)
            for record in records { PersistenceFileFormat.appendRecord(record, to: &buffer) }
            return buffer
        }
        for record in Self.version2Records {
            let read = try PersistenceFileFormat.read(version1Log([.sessionCreated(clientID: "c5"), record]), path: "log", kind: .log)
            #expect(read.records == [.sessionCreated(clientID: "c5")])
            guard case .undecodable = read.damage?.reason else {
                Issue.record("\(record) in a version-1 file: \(String(describing: read.damage))")
                continue
            }
            #expect(read.damage?.recordNumber == 2)
        }
        var future = PersistenceCodecTests.file([])
        future.setInteger(UInt16(4), at: 8)
        #expect(throws: PersistenceError.self) { try PersistenceFileFormat.read(future, path: "f", kind: .log) }
    }

    @Test("damaged MQTT 5 fields are reported damage, never a crash")
    func damagedVersion2Fields() throws {
        let bodies: [[UInt8]] = [
            // message, flags: properties follow, then a property block claiming 200 bytes.
            [5] + [0, 0, 0, 0, 0, 0, 0, 1] + [0x41] + [0, 1, 0x74] + [0, 0, 0, 0] + [200, 1, 0x26],
            // message whose property block holds an identifier that does not exist.
            [5] + [0, 0, 0, 0, 0, 0, 0, 1] + [0x41] + [0, 1, 0x74] + [0, 0, 0, 0] + [2, 0x7F, 0],
            // message whose property block holds a Session Expiry Interval (not allowed in PUBLISH).
            [5] + [0, 0, 0, 0, 0, 0, 0, 1] + [0x41] + [0, 1, 0x74] + [0, 0, 0, 0] + [5, 0x11, 0, 0, 0, 1],
            // retained: expiry flag without the expiry.
            [13] + [0, 1, 0x72] + [0x21] + [0, 0, 0, 0] + [0, 0, 0],
            // retained: unknown flag bit.
            [13] + [0, 1, 0x72] + [0x81] + [0, 0, 0, 0],
            // subscription options: identifier 0.
            [16] + [0, 1, 0x63] + [0, 1, 0x61] + [0x04] + [0, 0, 0, 0],
            // subscription options: unknown bit.
            [16] + [0, 1, 0x63] + [0, 1, 0x61] + [0x08],
            // session lifetime: protocol level 9.
            [17] + [0, 1, 0x63] + [9] + [0, 0, 0, 1],
        ]
        for body in bodies {
            var buffer = ByteBuffer(bytes: body)
            #expect(throws: RecordDecodingError.self) { try PersistentRecord.decode(body: &buffer) }
        }
    }

    @Test("replay keeps lifetimes and options; subscribing again resets options, a 3.1.1 lifetime drops them")
    func stateReplay() {
        var state = PersistentState()
        let options = SubscriptionOptions(noLocal: true, retainAsPublished: true, identifier: 4)
        for record: PersistentRecord in [
            .sessionCreated(clientID: "s"),
            .sessionLifetime(clientID: "s", protocolVersion: .v5, expiryInterval: 60),
            .subscribed(clientID: "s", filter: "a", qos: .atLeastOnce),
            .subscriptionOptions(clientID: "s", filter: "a", options: options),
            .subscribed(clientID: "s", filter: "b", qos: .atLeastOnce),
            .subscriptionOptions(clientID: "s", filter: "b", options: options),
            .subscribed(clientID: "s", filter: "b", qos: .exactlyOnce),
            .retained(topic: "r", qos: .atLeastOnce, payload: ByteBuffer(string: "x"), properties: Self.properties, expiresAt: WallClockTime(milliseconds: 7)),
        ] {
            state.apply(record)
        }
        #expect(state.inconsistencies == 0)
        #expect(state.sessions["s"]?.lifetime?.protocolVersion == .v5)
        #expect(state.sessions["s"]?.lifetime?.expiryInterval == 60)
        #expect(state.sessions["s"]?.subscriptionOptions == ["a": options])
        #expect(state.retained["r"] == PersistentState.Retained(qos: .atLeastOnce, payload: ByteBuffer(string: "x"), properties: Self.properties, expiresAt: WallClockTime(milliseconds: 7)))

        state.apply(.sessionLifetime(clientID: "s", protocolVersion: .v3_1_1, expiryInterval: .max))
        #expect(state.sessions["s"]?.subscriptionOptions == [:])
        state.apply(.subscriptionOptions(clientID: "gone", filter: "a", options: options))
        #expect(state.inconsistencies == 1)
    }

    @Test("expiry converts between the core's clock and the wall clock and keeps the time left")
    func clockConversion() {
        let clock = PersistenceClock(uptime: .uptimeNanoseconds(10_000_000_000), wall: WallClockTime(milliseconds: 1_000_000))
        #expect(clock.wallTime(of: .uptimeNanoseconds(12_500_000_000)) == WallClockTime(milliseconds: 1_002_500))
        #expect(clock.wallTime(of: .uptimeNanoseconds(9_000_000_000)) == WallClockTime(milliseconds: 999_000))
        // Restarted 1 s later on a machine whose uptime clock is at 3 s: 1.5 s of the 2.5 s remain.
        let later = PersistenceClock(uptime: .uptimeNanoseconds(3_000_000_000), wall: WallClockTime(milliseconds: 1_001_000))
        #expect(later.deadline(of: WallClockTime(milliseconds: 1_002_500)) == .uptimeNanoseconds(4_500_000_000))
        #expect(!later.hasExpired(WallClockTime(milliseconds: 1_002_500)))
        #expect(later.hasExpired(WallClockTime(milliseconds: 999_000)))
        #expect(later.deadline(of: WallClockTime(milliseconds: 999_000)) == later.uptime)
        // Absurd stored times neither trap nor wrap.
        #expect(later.deadline(of: WallClockTime(milliseconds: .max)) > later.uptime)
        #expect(later.deadline(of: WallClockTime(milliseconds: .min)) == later.uptime)
        #expect(clock.wallTime(of: .distantFuture) > clock.wall)

        let message = BrokerMessage(
            topic: "t", payload: ByteBuffer(), qos: .atLeastOnce, retain: false, storeID: 3,
            properties: MQTTProperties([.userProperty(key: "k", value: "v"), .subscriptionIdentifier(9)]),
            expiresAt: .uptimeNanoseconds(12_000_000_000))
        let stored = StoredMessage(message, mustRoute: false, origin: nil, clock: clock)
        #expect(stored.properties == MQTTProperties([.userProperty(key: "k", value: "v")]))  // identifiers are per delivery
        #expect(stored.expiresAt == WallClockTime(milliseconds: 1_002_000))
        #expect(stored.brokerMessage(later).expiresAt == .uptimeNanoseconds(4_000_000_000))
    }
}
