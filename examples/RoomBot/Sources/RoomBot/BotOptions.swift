import MQTTChat

/// The bot's command line: `RoomBot --room ROOM [--name NAME] [--history N] [-h HOST] [-p PORT] [-u USER -P PASSWORD]`.
struct BotOptions: Sendable {
    var host = "127.0.0.1"
    var port = 1883
    var room = "lobby"
    var name = "roombot"
    var username: String?
    var password: String?
    /// How many messages of the room the bot's room history service keeps for late joiners (0: no service).
    var history = 100

    /// Why the command line was refused.
    enum ParseError: Error, CustomStringConvertible {
        /// An option that needs a value came last.
        case missingValue(String)
        /// An option this bot does not know.
        case unknownOption(String)
        /// The port is not a number from 1 to 65535.
        case badPort(String)
        /// The history size is not a number from 0 to 10000.
        case badHistory(String)

        var description: String {
            switch self {
            case .missingValue(let option): "\(option) needs a value"
            case .unknownOption(let option): "unknown option \(option)"
            case .badPort(let value): "bad port '\(value)'"
            case .badHistory(let value): "bad --history '\(value)' (0 to 10000)"
            }
        }
    }

    static let usage =
        "usage: RoomBot --room ROOM [--name NAME] [--history N] [-h HOST] [-p PORT] [-u USER -P PASSWORD]"

    /// Parses `arguments` (without the program name).
    init(arguments: [String]) throws(ParseError) {
        var rest = arguments[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else { throw .missingValue(option) }
            switch option {
            case "-h", "--host": host = value
            case "-p", "--port":
                guard let port = Int(value), (1...65535).contains(port) else { throw .badPort(value) }
                self.port = port
            case "--room": room = value
            case "--name": name = value
            case "--history":
                guard let count = Int(value), (0...10_000).contains(count) else { throw .badHistory(value) }
                history = count
            case "-u", "--username": username = value
            case "-P", "--pw": password = value
            default: throw .unknownOption(option)
            }
        }
    }
}
