import MQTTChat
import MQTTClient
import MQTTCore

extension CLIFailure {
    /// The failure for an MQTT client error while talking to the broker at `address`.
    init(_ error: MQTTClientError, address: String) {
        switch error {
        case .badUsernameOrPassword:
            self.init(.noPermission, "\(address) refused the connection: bad user name or password")
        case .notAuthorized:
            self.init(.noPermission, "\(address) refused the connection: not authorised")
        case .subscriptionRefused(let filter):
            self.init(.noPermission, "\(address) refused the subscription to '\(filter)'")
        case .invalidTopic(let topic):
            self.init(.dataError, "invalid topic '\(topic)'")
        case .identifierRejected:
            self.init(.dataError, "\(address) rejected the client id")
        case .invalidConfiguration(let reason):
            self.init(.usage, "invalid settings: \(reason)")
        case .connectionRefused:
            self.init(.unavailable, "cannot connect to \(address): connection refused")
        case .hostUnreachable:
            self.init(.unavailable, "cannot connect to \(address): host unreachable")
        case .dnsFailure(let host):
            self.init(.unavailable, "cannot resolve host '\(host)'")
        case .tlsHandshakeFailed(let reason):
            self.init(.unavailable, "TLS handshake with \(address) failed: \(reason)")
        case .unacceptableProtocolVersion:
            self.init(.unavailable, "\(address) does not speak the requested MQTT version (-V)")
        case .serverUnavailable:
            self.init(.unavailable, "\(address) is unavailable")
        case .notConnected:
            self.init(.unavailable, "not connected to \(address)")
        case .offlineQueueFull:
            self.init(.unavailable, "\(address) is unreachable and the offline queue is full")
        case .timeout:
            self.init(.unavailable, "\(address) did not answer in time")
        case .protocolError(let reason):
            self.init(.unavailable, "protocol error with \(address): \(reason)")
        case .mosquitto(let code, let message):
            self.init(.unavailable, "connection to \(address) failed: \(message) (\(code))")
        case .reasonCode(let code, let reasonString):
            self.init(.unavailable, "\(address) answered \(code)" + (reasonString.map { ": \($0)" } ?? ""))
        case .mqtt5Required(let feature):
            self.init(.usage, "\(feature) needs MQTT 5")
        case .tooManyOutstandingRequests(let limit):
            self.init(.unavailable, "more than \(limit) requests are waiting for responses")
        case .noResponseTopic:
            self.init(.dataError, "the message has no response topic")
        }
    }

    /// The failure for a publish or subscription the broker answered with a failure reason code (MQTT 5 PUBACK,
    /// PUBREC or SUBACK; a 3.1.1 SUBACK 0x80): `what` ("Publish to 't'", "Subscription to 'f'") and the reason in
    /// words with its code, e.g. `Publish to 't' refused: Not authorized (0x87)`. 0x87 exits 77; a refused topic,
    /// payload or packet size 65; any other reason 69. Errors that are no refusal map as `init(_:address:)` does.
    init(refused what: String, _ error: MQTTClientError, address: String) {
        let code: MQTTReasonCode
        var reasonString: String?
        switch error {
        case .notAuthorized: code = .notAuthorized
        case .subscriptionRefused: code = MQTTReasonCode(rawValue: 0x80)
        case .reasonCode(let reason, let text): (code, reasonString) = (reason, text)
        default:
            self.init(error, address: address)
            return
        }
        let exit: CLIExitCode =
            switch code.rawValue {
            case 0x87: .noPermission
            case 0x8F, 0x90, 0x95, 0x99: .dataError
            default: .unavailable
            }
        self.init(exit, "\(what) refused: \(Self.words(code))" + (reasonString.map { ": \($0)" } ?? ""))
    }

    /// `Not authorized (0x87)`: the reason code's name, then its value (just the value when it has no name).
    static func words(_ code: MQTTReasonCode) -> String {
        let text = code.description  // "0x87 Not authorized"
        guard let space = text.firstIndex(of: " ") else { return text }
        return "\(text[text.index(after: space)...]) (\(text[..<space]))"
    }

    /// The failure for a chat client error.
    init(_ error: ChatError, address: String) {
        switch error {
        case .mqtt(let mqtt):
            self.init(mqtt, address: address)
        case .history(let history):
            self.init(history)
        case .notJoined(let room):
            self.init(.usage, "not in room '\(room)'")
        case .notConnected:
            self.init(.unavailable, "not connected to \(address)")
        case .encodingFailed:
            self.init(.dataError, "a chat message could not be encoded")
        }
    }

    /// The failure for a local history database error.
    init(_ error: ChatHistoryError) {
        switch error {
        case .openFailed(let path, let underlying):
            self.init(.ioError, "cannot open history database '\(path)': \(underlying)")
        case .queryFailed(let underlying):
            self.init(.ioError, "history database query failed: \(underlying)")
        case .corruptRow(let messageID, let column):
            self.init(.ioError, "history database row \(messageID) has an invalid \(column)")
        }
    }

    /// The failure for an invalid room or user name given as `what` (e.g. "room", "--name").
    init(_ error: ChatNameError, name: String, what: String) {
        self.init(.dataError, "invalid \(what) '\(name)': \(ChatNameError.explanation(error))")
    }
}

extension ChatNameError {
    /// Why a name was refused, in words.
    static func explanation(_ error: ChatNameError) -> String {
        switch error {
        case .empty: "it is empty"
        case .tooLong(let byteCount, let limit): "it is \(byteCount) bytes long, the limit is \(limit)"
        case .containsSingleLevelWildcard: "it contains '+'"
        case .containsMultiLevelWildcard: "it contains '#'"
        case .containsLevelSeparator: "it contains '/'"
        case .containsNullCharacter: "it contains U+0000"
        }
    }
}

/// Validates names given on the command line, turning failures into exit code 65.
enum CLINames {
    /// A validated room name.
    static func room(_ raw: String) throws(CLIFailure) -> RoomName {
        do { return try RoomName(raw) } catch { throw CLIFailure(error, name: raw, what: "room name") }
    }

    /// A validated user id.
    static func user(_ raw: String, what: String = "user name") throws(CLIFailure) -> UserID {
        do { return try UserID(raw) } catch { throw CLIFailure(error, name: raw, what: what) }
    }
}
