import Foundation
import MQTTChat
import MQTTClient

/// A running `mqttchat chat`: one ``ChatClient`` in one room, fed by input lines, printing its events.
struct ChatSession: Sendable {
    let client: ChatClient
    let room: RoomName
    let address: String
    let printer: Task<Void, Never>

    /// Connects, joins `room` and starts printing events; fails with the matching exit code.
    static func start(
        _ configuration: ChatClientConfiguration, room: RoomName, address: String, connectTimeout: Double
    ) async throws(CLIFailure) -> ChatSession {
        let client: ChatClient
        do { client = try ChatClient(configuration: configuration) } catch { throw CLIFailure(error, address: address) }
        let events = await client.events()
        let me = configuration.userID
        let printer = Task { await Self.print(events, me: me) }
        let connected = await withDeadline(seconds: connectTimeout) { () async -> ChatError? in
            do throws(ChatError) {
                try await client.connect()
                try await client.join(room)
                return nil
            } catch {
                return error
            }
        }
        switch connected {
        case .none:
            printer.cancel()
            throw CLIFailure(.unavailable, "\(address) did not accept the connection within \(connectTimeout) s")
        case .some(.some(let error)):
            printer.cancel()
            await client.disconnect()
            throw CLIFailure(error, address: address)
        case .some(.none):
            break
        }
        Console.line("* joined #\(room.rawValue) as \(ChatLineFormat.display(client.me)) (/help lists the commands)")
        return ChatSession(client: client, room: room, address: address, printer: printer)
    }

    /// Handles input lines until `/quit` or the end of input, then leaves and disconnects.
    func run(input: AsyncStream<String>, linger: Double) async {
        var inRoom = true
        var quit = false
        for await line in input {
            let command = ChatInput(line: line)
            if command == .quit {
                quit = true
                break
            }
            if command == .leave, inRoom {
                await report { () throws(ChatError) in try await client.leave(room) }
                inRoom = false
                Console.line("* you left #\(room.rawValue); /quit exits")
                continue
            }
            await handle(command, inRoom: inRoom)
        }
        if !quit, linger > 0 {
            // Piped input ended: give messages still on their way a moment to arrive and print.
            try? await Task.sleep(for: .milliseconds(Int64(linger * 1000)))
        }
        if inRoom { await report { () throws(ChatError) in try await client.leave(room) } }
        await client.disconnect()
        await printer.value
    }

    private func handle(_ command: ChatInput, inRoom: Bool) async {
        switch command {
        case .nothing, .quit, .leave:
            return
        case .help:
            Console.line(ChatInput.helpText)
        case .invalid(let message):
            Console.line("* \(message)")
        case .text(let text):
            guard inRoom else { return Console.line("* you are not in a room; /quit exits") }
            await report { () throws(ChatError) in
                Console.line(ChatLineFormat.live(try await client.send(text: text, in: room)))
            }
        case .gift(let name, let count):
            guard inRoom else { return Console.line("* you are not in a room; /quit exits") }
            await report { () throws(ChatError) in
                Console.line(ChatLineFormat.live(try await client.sendGift(name: name, count: count, in: room)))
            }
        case .direct(let user, let text):
            guard let recipient = try? UserID(user) else { return Console.line("* /dm: '\(user)' is not a valid user id") }
            if await client.isOnline(recipient) != true {
                // Still sent: QoS 1 to the inbox is kept for a recipient whose session is persistent (a client
                // that subscribed with clean session off); chat clients themselves use clean sessions.
                Console.line("* no user '\(user)' is online; sending anyway (only a persistent session receives it)")
            }
            await report { () throws(ChatError) in
                Console.line(ChatLineFormat.live(try await client.sendDirect(text: text, to: recipient)))
            }
        case .members:
            let members = await client.members(of: room).map(ChatLineFormat.display)
            Console.line("* members of #\(room.rawValue): " + (members.isEmpty ? "(none)" : members.joined(separator: ", ")))
        case .info:
            Console.line(await ChatInfo.line(client, address: address, room: room))
        case .history(let limit):
            await report { () throws(ChatError) in
                let records = try await client.history(room: room, limit: limit)
                Console.line("* last \(records.count) messages of #\(room.rawValue):")
                for record in records { Console.line(ChatLineFormat.history(record)) }
            }
        }
    }

    /// Runs a chat operation; a failure is reported on stderr and the session goes on.
    private func report(_ operation: () async throws(ChatError) -> Void) async {
        do { try await operation() } catch {
            Console.error("mqttchat chat: \(CLIFailure(error, address: address).message)")
        }
    }

    /// Prints events until the client disconnects.
    private static func print(_ events: AsyncStream<ChatEvent>, me: UserID) async {
        var connections = 0
        for await event in events {
            switch event {
            case .text(let record), .gift(let record), .directMessage(let record):
                Console.line(ChatLineFormat.live(record))
            case .presenceChanged(let change):
                if change.member.id != me { Console.line(ChatLineFormat.presence(change)) }
            case .joined, .left:
                continue  // presence changes already say who came and went
            case .historyMerged(let room, let records):
                Console.line("* \(records.count) earlier message\(records.count == 1 ? "" : "s") of #\(room.rawValue) from the room history service:")
                for record in records { Console.line(ChatLineFormat.history(record)) }
            case .connection(let state):
                switch state {
                case .connected:
                    connections += 1
                    if connections > 1 { Console.line("* reconnected") }
                case .disconnected(.connectionLost):
                    Console.line("* connection lost, reconnecting")
                case .connecting, .reconnecting, .closed, .disconnected(.connectFailed):
                    continue
                }
            }
        }
    }
}
