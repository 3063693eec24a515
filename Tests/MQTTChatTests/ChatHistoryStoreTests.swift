import Foundation
import Testing

@testable import MQTTChat

@Suite("Local history store")
struct ChatHistoryStoreTests {
    let lobby: RoomName
    let kitchen: RoomName
    let alice: ChatMember
    let bob: ChatMember

    init() throws {
        lobby = try RoomName("lobby")
        kitchen = try RoomName("kitchen")
        alice = ChatMember(id: try UserID("alice"), profile: UserProfile(name: "Alice", level: 2, iconURL: "a.png"))
        bob = ChatMember(id: try UserID("bob"), profile: UserProfile(name: "Bob"))
    }

    private func text(_ id: String, _ line: String, at ms: Int64, in room: RoomName, from sender: ChatMember)
        -> ChatMessageRecord
    {
        ChatMessageRecord(
            id: id, sender: sender, sentAt: Date(timeIntervalSince1970: Double(ms) / 1000), conversation: .room(room),
            content: .text(line), direction: sender == alice ? .sent : .received)
    }

    @Test("a redelivered message is stored once")
    func redelivery() throws {
        let store = try ChatHistoryStore(location: .inMemory)
        let message = text("m1", "hi", at: 1000, in: lobby, from: bob)
        #expect(try store.store(message))
        #expect(try !store.store(message))
        #expect(try store.history(room: lobby) == [message])
        #expect(try store.count() == 1)
    }

    @Test("history is per room, newest last, and limited to the newest messages")
    func orderAndLimit() throws {
        let store = try ChatHistoryStore(location: .inMemory)
        // Inserted out of order; two share a millisecond (insertion order breaks the tie).
        let messages = [
            text("m3", "three", at: 3000, in: lobby, from: bob), text("m1", "one", at: 1000, in: lobby, from: alice),
            text("m2", "two", at: 2000, in: lobby, from: bob), text("m4", "four", at: 3000, in: lobby, from: alice),
            text("k1", "other room", at: 2500, in: kitchen, from: bob),
        ]
        for message in messages { try store.store(message) }
        #expect(try store.history(room: lobby, limit: 10).map(\.id) == ["m1", "m2", "m3", "m4"])
        #expect(try store.history(room: lobby, limit: 2).map(\.id) == ["m3", "m4"])
        #expect(try store.history(room: kitchen).map(\.id) == ["k1"])
        #expect(try store.history(room: lobby, limit: 0).isEmpty)
    }

    @Test("gifts and direct messages round-trip with every field")
    func giftsAndDirect() throws {
        let store = try ChatHistoryStore(location: .inMemory)
        let gift = ChatMessageRecord(
            id: "g1", sender: alice, sentAt: Date(timeIntervalSince1970: 5), conversation: .room(lobby),
            content: .gift(ChatGift(name: "rocket", count: 9, url: "https://x/r.gif")), direction: .sent)
        let directIn = ChatMessageRecord(
            id: "d1", sender: bob, sentAt: Date(timeIntervalSince1970: 6), conversation: .direct(with: bob.id),
            content: .text("psst"), direction: .received)
        let directOut = ChatMessageRecord(
            id: "d2", sender: alice, sentAt: Date(timeIntervalSince1970: 7), conversation: .direct(with: bob.id),
            content: .text("hi bob"), direction: .sent)
        for record in [gift, directIn, directOut] { try store.store(record) }
        #expect(try store.history(room: lobby) == [gift])
        #expect(try store.directMessages(with: bob.id) == [directIn, directOut])
        #expect(try store.directMessages(with: alice.id).isEmpty)
    }

    @Test("a file database keeps history across reopening")
    func persistent() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mqttchat-history-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("nested/alice.sqlite").path
        let message = text("m1", "kept", at: 1, in: lobby, from: bob)
        do {
            let store = try ChatHistoryStore(location: .file(path: path))
            try store.store(message)
        }
        let reopened = try ChatHistoryStore(location: .file(path: path))
        #expect(try reopened.history(room: lobby) == [message])
    }

    @Test("the default location is ~/.mqttchat/<clientID>.sqlite")
    func defaultLocation() throws {
        let path = try #require(ChatHistoryLocation.defaultFile(for: try UserID("carol")).path)
        #expect(path.hasSuffix("/.mqttchat/carol.sqlite"))
        #expect(ChatHistoryLocation.inMemory.path == nil)
    }
}
