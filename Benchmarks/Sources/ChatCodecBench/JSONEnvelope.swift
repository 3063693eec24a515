/// A Codable mirror of `ProtoEnvelope` with the same fields, for the JSONEncoder comparison.
/// Absent bodies are `nil` and therefore left out of the JSON, as protobuf leaves them out.
struct JSONEnvelope: Codable, Equatable {
    struct UserInfo: Codable, Equatable {
        var level: Int32
        var name: String
        var iconURL: String
    }
    struct Join: Codable, Equatable {
        var user: UserInfo
        var sessionID: String
    }
    struct Text: Codable, Equatable {
        var user: UserInfo
        var text: String
    }
    struct Gift: Codable, Equatable {
        var user: UserInfo
        var giftName: String
        var giftURL: String
        var giftCount: Int32
    }
    struct Heartbeat: Codable, Equatable {
        var sequence: UInt64
    }

    var messageID: String
    var senderID: String
    var room: String
    var sentAtMs: Int64
    var type: Int
    var join: Join?
    var text: Text?
    var gift: Gift?
    var heartbeat: Heartbeat?
}
