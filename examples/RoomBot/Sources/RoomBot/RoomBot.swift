import Foundation
import MQTTChat
import MQTTClient

/// A room bot built on `ChatClient`: it welcomes everyone who joins its room, counts the gifts people send,
/// and posts the gift leaderboard when someone says `/top`. Beside it runs a `RoomHistoryService` (its own MQTT 5
/// connection, client id `<name>-history`) that keeps the room's last `--history` messages (default 100) and
/// answers late joiners' "messages since X" requests; without MQTT 5 the bot runs without it.
///
///     swift run RoomBot --room lobby -p 1883
///     mqttchat chat --room lobby --name alice -p 1883     # then: /gift rose 3, /top
@main
enum RoomBot {
    static func main() async {
        let options: BotOptions
        let room: RoomName
        let id: UserID
        do {
            options = try BotOptions(arguments: Array(CommandLine.arguments.dropFirst()))
            room = try RoomName(options.room)
            id = try UserID(options.name)
        } catch {
            FileHandle.standardError.write(Data("RoomBot: \(error)\n\(BotOptions.usage)\n".utf8))
            exit(64)
        }

        var configuration = ChatClientConfiguration(
            userID: id, profile: UserProfile(name: options.name), host: options.host, port: options.port)
        configuration.mqtt.username = options.username
        configuration.mqtt.password = options.password
        configuration.history = .inMemory  // a bot needs no history on disk

        let client: ChatClient
        do {
            client = try ChatClient(configuration: configuration)
            let events = await client.events()  // before connecting, so nothing is missed
            try await client.connect()
            try await client.join(room)
            let service = await startHistoryService(options, room: room)
            stopOnSignals(client, room: room, service: service)
            say("RoomBot ready in #\(room) as \(id)")
            await serve(events, client: client, room: room)
        } catch {
            FileHandle.standardError.write(Data("RoomBot: \(error)\n".utf8))
            exit(69)
        }
    }

    /// Reacts to the room until the client disconnects.
    static func serve(_ events: AsyncStream<ChatEvent>, client: ChatClient, room: RoomName) async {
        var leaderboard = GiftLeaderboard()
        for await event in events {
            switch event {
            case .joined(let joinedRoom, let member) where joinedRoom == room && member.id != client.me.id:
                await post("Welcome to #\(room), \(GiftLeaderboard.name(of: member))! Send a gift, and say /top for the leaderboard.",
                    client: client, room: room)
            case .gift(let record):
                if case .gift(let gift) = record.content {
                    leaderboard.record(gift.count, from: record.sender)
                }
            case .text(let record):
                if case .text(let text) = record.content, text.trimmingCharacters(in: .whitespaces) == "/top" {
                    await post(leaderboard.summary(), client: client, room: room)
                }
            default:
                continue
            }
        }
    }

    static func post(_ text: String, client: ChatClient, room: RoomName) async {
        do {
            try await client.send(text: text, in: room)
            say("said: \(text)")
        } catch {
            FileHandle.standardError.write(Data("RoomBot: could not post: \(error)\n".utf8))
        }
    }

    /// Starts the room history service, or says why there is none (`--history 0`, or a broker without MQTT 5).
    static func startHistoryService(_ options: BotOptions, room: RoomName) async -> RoomHistoryService? {
        guard options.history > 0 else { return nil }
        var configuration = RoomHistoryServiceConfiguration(
            clientID: "\(options.name)-history", rooms: [room], capacity: options.history, host: options.host,
            port: options.port)
        configuration.mqtt.username = options.username
        configuration.mqtt.password = options.password
        do {
            let service = try RoomHistoryService(configuration: configuration)
            try await service.start()
            say("RoomBot keeps the last \(options.history) messages of #\(room) for late joiners")
            return service
        } catch {
            FileHandle.standardError.write(Data("RoomBot: no room history service: \(error)\n".utf8))
            return nil
        }
    }

    /// On SIGINT or SIGTERM: leave the room and disconnect cleanly (others see "left", not "went offline").
    static func stopOnSignals(_ client: ChatClient, room: RoomName, service: RoomHistoryService?) {
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                Task {
                    // The service first: the client's disconnect ends `serve`, and with it `main`.
                    await service?.stop()
                    try? await client.leave(room)
                    await client.disconnect()
                    say("RoomBot stopped")
                    exit(0)
                }
            }
            source.resume()
            signalSources.withLock { $0.append(source) }
        }
    }

    /// Keeps the signal sources alive for the life of the process.
    static let signalSources = LockedSources()

    /// One line on stdout, written at once (stdout may be a pipe).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// The process's signal sources, behind a lock.
final class LockedSources: @unchecked Sendable {
    // @unchecked: `sources` is only touched while holding `lock`.
    private let lock = NSLock()
    private var sources: [any DispatchSourceSignal] = []

    func withLock<T>(_ body: (inout [any DispatchSourceSignal]) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&sources)
    }
}
