import Foundation

/// What the server keeps of a user for SCRAM-SHA-512 (RFC 5802, with SHA-512 as RFC 7677 does for SHA-256): the
/// salt and iteration count of the user's salted password, and the two keys derived from it. A mosquitto `$7$`
/// hash *is* the salted password (PBKDF2-HMAC-SHA512 of the password, 64 bytes), so a password file made by
/// `mosquitto_passwd` serves SCRAM without knowing any password.
public struct ScramCredentials: Sendable, Hashable {
    let salt: [UInt8]
    let iterations: Int
    /// H(HMAC(SaltedPassword, "Client Key")).
    let storedKey: [UInt8]
    /// HMAC(SaltedPassword, "Server Key").
    let serverKey: [UInt8]

    /// The credentials of a user whose salted password (PBKDF2-HMAC-SHA512 output) is `saltedPassword`.
    init(saltedPassword: [UInt8], salt: [UInt8], iterations: Int) {
        let mac = HMACSHA512(key: saltedPassword)
        self.salt = salt
        self.iterations = iterations
        self.storedKey = SHA512.hash(mac.authenticationCode(for: Array("Client Key".utf8)))
        self.serverKey = mac.authenticationCode(for: Array("Server Key".utf8))
    }
}

/// Why a SCRAM exchange failed (the client is refused with CONNACK 0x86, or 0x82 for a malformed message).
enum ScramError: Error, Sendable, Hashable {
    /// A message that does not follow RFC 5802's syntax, or channel binding, which is not offered.
    case malformed(String)
    /// The proof did not match: wrong password, or no such user.
    case authenticationFailed
}

/// The server side of one SCRAM-SHA-512 exchange, as MQTT 5 enhanced authentication carries it (MQTT 5.0 4.12):
/// CONNECT brings client-first, AUTH 0x18 takes server-first back, AUTH 0x18 brings client-final, and CONNACK
/// carries server-final. A value type: it holds what the second step needs and returns what to send.
struct ScramServerExchange: Sendable {
    /// The authentication method name on the wire.
    static let method = "SCRAM-SHA-512"

    let username: String
    private let clientFirstBare: String
    private let serverFirst: String
    private let nonce: String
    private let credentials: ScramCredentials
    /// Whether the user exists: an unknown user runs the exchange to its end on made-up credentials, so that the
    /// answer does not say which user names exist.
    private let userKnown: Bool

    /// Reads client-first (`n,,n=USER,r=CLIENTNONCE`) and answers with server-first.
    /// - Parameters:
    ///   - lookup: the credentials of a user name, nil when there is no such user.
    ///   - serverNonce: fresh randomness (printable, no comma), appended to the client's nonce.
    static func start(
        clientFirst: [UInt8], lookup: (String) -> ScramCredentials?, serverNonce: String
    ) -> Result<(exchange: ScramServerExchange, serverFirst: [UInt8]), ScramError> {
        let message = String(decoding: clientFirst, as: UTF8.self)
        // GS2 header: "n,," (no channel binding, no authzid). "y" or "p" ask for channel binding: not offered.
        guard message.hasPrefix("n,,") else { return .failure(.malformed("client-first must start with n,,")) }
        let bare = String(message.dropFirst(3))
        let attributes = parse(bare)
        guard let name = attributes["n"], let clientNonce = attributes["r"], !clientNonce.isEmpty,
            let username = decodeName(name)
        else {
            return .failure(.malformed("client-first needs n=USER and r=NONCE"))
        }
        let known = lookup(username)
        let credentials = known ?? ScramCredentials(
            saltedPassword: (0..<64).map { _ in UInt8.random(in: 0...255) },
            salt: (0..<12).map { _ in UInt8.random(in: 0...255) }, iterations: PasswordHash.defaultIterations)
        let nonce = clientNonce + serverNonce
        let serverFirst = "r=\(nonce),s=\(Data(credentials.salt).base64EncodedString()),i=\(credentials.iterations)"
        let exchange = ScramServerExchange(
            username: username, clientFirstBare: bare, serverFirst: serverFirst, nonce: nonce,
            credentials: credentials, userKnown: known != nil)
        return .success((exchange, Array(serverFirst.utf8)))
    }

    /// Reads client-final (`c=biws,r=NONCE,p=PROOF`), checks the proof and returns server-final (`v=SIGNATURE`).
    func finish(clientFinal: [UInt8]) -> Result<[UInt8], ScramError> {
        let message = String(decoding: clientFinal, as: UTF8.self)
        guard let proofStart = message.range(of: ",p=") else { return .failure(.malformed("client-final needs p=PROOF")) }
        let withoutProof = String(message[..<proofStart.lowerBound])
        let attributes = Self.parse(message)
        guard attributes["c"] == "biws" else { return .failure(.malformed("client-final must carry c=biws")) }
        guard attributes["r"] == nonce else { return .failure(.malformed("client-final has another nonce")) }
        guard let proofText = attributes["p"], let proof = Data(base64Encoded: proofText), proof.count == 64 else {
            return .failure(.malformed("client-final proof is not 64 bytes of base64"))
        }
        let authMessage = Array("\(clientFirstBare),\(serverFirst),\(withoutProof)".utf8)
        let clientSignature = HMACSHA512(key: credentials.storedKey).authenticationCode(for: authMessage)
        let clientKey = zip(proof, clientSignature).map { $0 ^ $1 }
        guard ConstantTime.equal(SHA512.hash(clientKey), credentials.storedKey), userKnown else {
            return .failure(.authenticationFailed)
        }
        let serverSignature = HMACSHA512(key: credentials.serverKey).authenticationCode(for: authMessage)
        return .success(Array("v=\(Data(serverSignature).base64EncodedString())".utf8))
    }

    /// `a=value,b=value` into a dictionary (the first occurrence of each attribute).
    private static func parse(_ message: String) -> [String: String] {
        var attributes: [String: String] = [:]
        for field in message.split(separator: ",", omittingEmptySubsequences: false) {
            guard field.count >= 2, field.dropFirst().first == "=" else { continue }
            let key = String(field.prefix(1))
            if attributes[key] == nil { attributes[key] = String(field.dropFirst(2)) }
        }
        return attributes
    }

    /// A `saslname`: `=2C` stands for `,` and `=3D` for `=`; any other `=` is malformed.
    private static func decodeName(_ name: String) -> String? {
        var decoded = ""
        var rest = Substring(name)
        while let equals = rest.firstIndex(of: "=") {
            decoded += rest[..<equals]
            let escape = rest[equals...].prefix(3)
            switch escape {
            case "=2C": decoded += ","
            case "=3D": decoded += "="
            default: return nil
            }
            rest = rest[equals...].dropFirst(3)
        }
        decoded += rest
        return decoded.isEmpty ? nil : decoded
    }
}
