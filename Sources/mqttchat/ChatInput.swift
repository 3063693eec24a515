import Foundation

/// One line typed in `mqttchat chat`, parsed.
enum ChatInput: Equatable, Sendable {
    /// A line of text for the room: anything that is not one of the commands below (so `/top` reaches a bot);
    /// a leading `//` sends a literal `/`.
    case text(String)
    /// `/gift NAME [COUNT]`.
    case gift(name: String, count: Int32)
    /// `/dm USER TEXT`.
    case direct(user: String, text: String)
    /// `/members`.
    case members
    /// `/history [N]`.
    case history(limit: Int)
    /// `/info`: the connection (broker, protocol version, session).
    case info
    /// `/leave`: leave the room but stay connected (direct messages still arrive).
    case leave
    /// `/quit`: leave the room and disconnect.
    case quit
    /// `/help`.
    case help
    /// An empty line: nothing to do.
    case nothing
    /// A command used wrongly, with what to tell the user.
    case invalid(String)

    /// The default number of lines `/history` shows.
    static let defaultHistoryLimit = 20

    /// What `/help` prints.
    static let helpText = """
        Commands:
          TEXT               say TEXT in the room (other /words are sent as text too, e.g. a bot's /top;
                             start with // to say something beginning with one of these commands)
          /gift NAME [COUNT] send a gift (COUNT defaults to 1)
          /dm USER TEXT      send a direct message to USER (their user id)
          /members           who is in the room
          /history [N]       the last N messages of the room (default 20)
          /info              the broker, the MQTT version in use and the session
          /leave             leave the room (direct messages still arrive)
          /quit              leave and exit
          /help              this help
        """

    /// Parses one line of input.
    init(line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            self = .nothing
            return
        }
        guard trimmed.hasPrefix("/") else {
            self = .text(line)
            return
        }
        if trimmed.hasPrefix("//") {
            self = .text(String(trimmed.dropFirst()))
            return
        }
        let words = trimmed.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let command = words[0]
        let arguments = Array(words.dropFirst())
        switch command {
        case "/gift":
            guard (1...2).contains(arguments.count) else {
                self = .invalid("usage: /gift NAME [COUNT]")
                return
            }
            guard let count = arguments.count == 2 ? Int32(arguments[1]) : 1, count > 0 else {
                self = .invalid("/gift: COUNT must be a positive number")
                return
            }
            self = .gift(name: arguments[0], count: count)
        case "/dm":
            guard arguments.count >= 2 else {
                self = .invalid("usage: /dm USER TEXT")
                return
            }
            // Keep the text as typed (inner spacing included): everything after the user name.
            let afterCommand = trimmed.dropFirst(command.count).drop(while: { $0 == " " })
            let text = afterCommand.dropFirst(arguments[0].count).drop(while: { $0 == " " })
            self = .direct(user: arguments[0], text: String(text))
        case "/members":
            self = arguments.isEmpty ? .members : .invalid("usage: /members")
        case "/history":
            guard arguments.count <= 1 else {
                self = .invalid("usage: /history [N]")
                return
            }
            guard let limit = arguments.first.map({ Int($0) }) ?? Self.defaultHistoryLimit, limit > 0 else {
                self = .invalid("/history: N must be a positive number")
                return
            }
            self = .history(limit: limit)
        case "/info":
            self = arguments.isEmpty ? .info : .invalid("usage: /info")
        case "/leave":
            self = .leave
        case "/quit", "/exit":
            self = .quit
        case "/help", "/?":
            self = .help
        default:
            // Not one of ours: say it in the room, where a bot may understand it (e.g. RoomBot's /top).
            self = .text(line)
        }
    }
}
