import MQTTCore
import Testing

@testable import MQTTBroker

@Suite("Packet identifier table")
struct PacketIDTableTests {
    /// Checks every identifier the test used against the model, and the count.
    func expectSame(_ table: PacketIDTable<Int>, _ model: [UInt16: Int], keys: Set<UInt16>) {
        #expect(table.count == model.count)
        for key in keys {
            #expect(table[key] == model[key], "identifier \(key)")
            #expect(table.contains(key) == (model[key] != nil), "identifier \(key)")
        }
        let entries = Dictionary(uniqueKeysWithValues: table.entries.map { ($0.packetID, $0.value) })
        #expect(entries == model)
    }

    @Test("random inserts, replacements, changes and removals agree with a Dictionary")
    func agreesWithDictionary() {
        var generator = SplitMix64(seed: 42)
        var table = PacketIDTable<Int>()
        var model: [UInt16: Int] = [:]
        // Identifiers drawn from a few that collide when masked (multiples of 16, 64 and 256 apart) and from a
        // sliding window across the wrap, as the broker allocates them.
        let colliding: [UInt16] = (0..<24).map { UInt16($0 * 64 + 5) } + (0..<8).map { UInt16($0 * 256 + 5) }
        let window: [UInt16] = (65_500...65_535).map { UInt16($0) } + (1...40).map { UInt16($0) }
        let keys = Set(colliding + window + [0, 16, 32, 48])
        let pool = Array(keys)
        for step in 0..<20_000 {
            let key = pool[Int(generator.next() % UInt64(pool.count))]
            switch generator.next() % 5 {
            case 0, 1:
                table[key] = step
                model[key] = step
            case 2:
                #expect(table.removeValue(forKey: key) == model.removeValue(forKey: key))
            case 3:
                let changed = table.modifyValue(forKey: key) { $0 += 1 }
                #expect(changed == (model[key] != nil))
                model[key]? += 1
            default:
                table[key] = nil
                model[key] = nil
            }
            if step % 500 == 0 { expectSame(table, model, keys: keys) }
        }
        expectSame(table, model, keys: keys)
    }

    @Test("entries past a removed one that probed beyond it stay reachable")
    func removalKeepsProbeChains() {
        var table = PacketIDTable<Int>()
        // Fill 12 of 16 slots, so probe chains form, then remove every other key and check the rest.
        let keys = (1...12).map { UInt16($0 * 7) }
        for key in keys { table[key] = Int(key) }
        for key in keys where key % 2 == 0 { #expect(table.removeValue(forKey: key) == Int(key)) }
        for key in keys {
            #expect(table[key] == (key % 2 == 0 ? nil : Int(key)), "identifier \(key)")
        }
        #expect(table.count == 6)
    }

    @Test("a window of 20 sliding through every identifier twice")
    func slidingWindow() {
        var table = PacketIDTable<Int>()
        var next: UInt16 = 1
        var inFlight: [UInt16] = []
        for step in 0..<(2 * 65_535) {
            if inFlight.count == 20 {
                let oldest = inFlight.removeFirst()
                #expect(table.removeValue(forKey: oldest) != nil)
            }
            table[next] = step
            inFlight.append(next)
            next = next == UInt16.max ? 1 : next + 1
        }
        #expect(table.count == 20)
        #expect(inFlight.allSatisfy { table.contains($0) })
    }
}
