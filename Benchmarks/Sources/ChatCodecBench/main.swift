// Compares the size and encode+decode speed of chat envelopes as protobuf (binary), as protobuf JSON
// (SwiftProtobuf's JSON mapping) and as JSON from JSONEncoder/JSONDecoder of an equivalent Codable struct.
// Run with: swift run --package-path Benchmarks --scratch-path .build-bench-release -c release ChatCodecBench [iterations] [runs]
import Foundation
import MQTTChat
import SwiftProtobuf

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let iterations = arguments.first ?? 20_000
let runs = arguments.dropFirst().first ?? 7

guard let room = try? RoomName("lobby"), let alice = try? UserID("alice-7f3a") else {
    print("invalid benchmark names")
    exit(1)
}
let profile = UserProfile(name: "targetcloud3", level: 17, iconURL: "https://cdn.example.com/icons/icon1.png")
let factory = ChatEnvelopeFactory(sender: alice, profile: profile, session: UUID().uuidString)

let samples: [(String, ProtoEnvelope)] = [
    ("text", factory.text("Hello everyone, what a great stream tonight! 🎉", in: room)),
    ("gift", factory.gift(ChatGift(name: "rocket", count: 3, url: "https://cdn.example.com/gifts/rocket.gif"), in: room)),
    ("join", factory.join(room)),
    ("heartbeat", factory.heartbeat(sequence: 42, in: room)),
]

func codable(_ envelope: ProtoEnvelope) -> JSONEnvelope {
    func user(_ info: ProtoUserInfo) -> JSONEnvelope.UserInfo {
        .init(level: info.level, name: info.name, iconURL: info.iconURL)
    }
    var json = JSONEnvelope(
        messageID: envelope.messageID, senderID: envelope.senderID, room: envelope.room,
        sentAtMs: envelope.sentAtMs, type: envelope.type.rawValue)
    switch envelope.body {
    case .join(let join)?: json.join = .init(user: user(join.user), sessionID: join.sessionID)
    case .text(let text)?: json.text = .init(user: user(text.user), text: text.text)
    case .gift(let gift)?:
        json.gift = .init(user: user(gift.user), giftName: gift.giftName, giftURL: gift.giftURL, giftCount: gift.giftCount)
    case .heartbeat(let beat)?: json.heartbeat = .init(sequence: beat.sequence)
    case .leave?, .direct?, .status?, nil: break
    }
    return json
}

/// Median nanoseconds per encode+decode round trip over `runs` runs of `iterations` each.
func measure(_ roundTrip: () throws -> Int) rethrows -> Double {
    var perRun: [Double] = []
    var sink = 0
    for _ in 0..<runs {
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<iterations { sink &+= try roundTrip() }
        let elapsed = clock.now - start
        let nanos = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        perRun.append(nanos / Double(iterations))
    }
    if sink == 42 { print("") }  // keeps the work observable
    return perRun.sorted()[perRun.count / 2]
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

let encoder = JSONEncoder()
let decoder = JSONDecoder()
print("ChatCodecBench: \(iterations) encode+decode round trips per run, median of \(runs) runs")
print(pad("message", 11) + pad("format", 16) + pad("bytes", 8) + pad("ns/roundtrip", 14) + "vs protobuf")
do {
    for (name, envelope) in samples {
        let binary: [UInt8] = try envelope.serializedBytes()
        let protoJSON: [UInt8] = try envelope.jsonUTF8Bytes()
        let mirror = codable(envelope)
        let codableJSON = try encoder.encode(mirror)
        guard try ProtoEnvelope(serializedBytes: binary) == envelope,
            try ProtoEnvelope(jsonUTF8Bytes: protoJSON) == envelope,
            try decoder.decode(JSONEnvelope.self, from: codableJSON) == mirror
        else {
            print("round trip mismatch for \(name)")
            exit(1)
        }
        let binaryTime = try measure {
            let bytes: [UInt8] = try envelope.serializedBytes()
            return try ProtoEnvelope(serializedBytes: bytes).messageID.utf8.count
        }
        let protoJSONTime = try measure {
            let bytes: [UInt8] = try envelope.jsonUTF8Bytes()
            return try ProtoEnvelope(jsonUTF8Bytes: bytes).messageID.utf8.count
        }
        let codableTime = try measure {
            let data = try encoder.encode(mirror)
            return try decoder.decode(JSONEnvelope.self, from: data).messageID.utf8.count
        }
        let rows: [(String, Int, Double)] = [
            ("protobuf", binary.count, binaryTime), ("protobuf-JSON", protoJSON.count, protoJSONTime),
            ("JSONEncoder", codableJSON.count, codableTime),
        ]
        for (format, size, time) in rows {
            let ratio = String(format: "%.1fx size, %.1fx time", Double(size) / Double(binary.count), time / binaryTime)
            print(pad(name, 11) + pad(format, 16) + pad("\(size)", 8) + pad(String(format: "%.0f", time), 14) + ratio)
        }
    }
} catch {
    print("benchmark failed: \(error)")
    exit(1)
}
