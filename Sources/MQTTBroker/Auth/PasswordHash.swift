import Foundation

/// One stored password in mosquitto's password-file syntax.
///
/// - `$7$ITERATIONS$SALT$HASH`: PBKDF2-HMAC-SHA512, what mosquitto 2.0 writes (101 iterations, 12-byte salt,
///   64-byte hash, salt and hash in padded base64).
/// - `$6$SALT$HASH`: SHA512(password + salt), what mosquitto 1.x wrote.
public struct PasswordHash: Sendable, Hashable {
    /// How the hash was computed.
    public enum Algorithm: Sendable, Hashable {
        /// PBKDF2-HMAC-SHA512 with this many iterations (`$7$`).
        case pbkdf2SHA512(iterations: Int)
        /// One SHA-512 over the password followed by the salt (`$6$`).
        case saltedSHA512
    }

    /// The iteration count `mosquitto_passwd` 2.0 writes, and so does `mqttchat passwd`.
    public static let defaultIterations = 101
    /// Salt length `mosquitto_passwd` 2.0 writes.
    public static let defaultSaltLength = 12
    /// Highest iteration count accepted from a file: each CONNECT runs the hash on the broker's event loop.
    public static let maximumIterations = 1_000_000

    /// How the hash was computed.
    public let algorithm: Algorithm
    /// The salt.
    public let salt: [UInt8]
    /// The stored hash.
    public let hash: [UInt8]

    /// Parses the part after `user:` in a password file.
    public init(parsing text: String) throws(PasswordHashError) {
        let fields = text.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        // A leading "$" makes the first field empty: ["", "7", iterations, salt, hash] or ["", "6", salt, hash].
        guard fields.count >= 4, fields[0].isEmpty else { throw .unrecognizedFormat }
        switch fields[1] {
        case "7":
            guard fields.count == 5 else { throw .unrecognizedFormat }
            guard let iterations = Int(fields[2]), (1...Self.maximumIterations).contains(iterations) else {
                throw .invalidIterations(fields[2])
            }
            self.algorithm = .pbkdf2SHA512(iterations: iterations)
            self.salt = try Self.decodeBase64(fields[3])
            self.hash = try Self.decodeBase64(fields[4])
        case "6":
            guard fields.count == 4 else { throw .unrecognizedFormat }
            self.algorithm = .saltedSHA512
            self.salt = try Self.decodeBase64(fields[2])
            self.hash = try Self.decodeBase64(fields[3])
        default:
            throw .unrecognizedFormat
        }
        guard hash.count == SHA512.digestSize else { throw .invalidHashLength(hash.count) }
        guard !salt.isEmpty else { throw .invalidBase64 }
    }

    /// A new `$7$` hash of `password` with a fresh random salt (from the system's secure generator).
    public init(password: [UInt8], iterations: Int = PasswordHash.defaultIterations) {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<Self.defaultSaltLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        self.init(password: password, salt: salt, iterations: iterations)
    }

    /// A `$7$` hash of `password` with the given salt (tests use fixed salts).
    public init(password: [UInt8], salt: [UInt8], iterations: Int = PasswordHash.defaultIterations) {
        self.algorithm = .pbkdf2SHA512(iterations: max(1, iterations))
        self.salt = salt
        self.hash = PBKDF2SHA512.derive(
            password: password, salt: salt, iterations: max(1, iterations), length: SHA512.digestSize)
    }

    /// Whether `password` hashes to the stored hash; the final comparison takes constant time.
    public func verify(_ password: [UInt8]) -> Bool {
        ConstantTime.equal(Self.compute(algorithm, password: password, salt: salt), hash)
    }

    /// The text stored after `user:` (mosquitto's syntax, padded base64).
    public var encoded: String {
        let salt = Data(salt).base64EncodedString()
        let hash = Data(hash).base64EncodedString()
        switch algorithm {
        case .pbkdf2SHA512(let iterations): return "$7$\(iterations)$\(salt)$\(hash)"
        case .saltedSHA512: return "$6$\(salt)$\(hash)"
        }
    }

    static func compute(_ algorithm: Algorithm, password: [UInt8], salt: [UInt8]) -> [UInt8] {
        switch algorithm {
        case .pbkdf2SHA512(let iterations):
            return PBKDF2SHA512.derive(password: password, salt: salt, iterations: iterations, length: SHA512.digestSize)
        case .saltedSHA512:
            return SHA512.hash(password + salt)
        }
    }

    private static func decodeBase64(_ text: String) throws(PasswordHashError) -> [UInt8] {
        guard let data = Data(base64Encoded: text) else { throw .invalidBase64 }
        return [UInt8](data)
    }
}

/// Why a stored password could not be parsed.
public enum PasswordHashError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `$7$ITERATIONS$SALT$HASH` nor `$6$SALT$HASH` (a plain-text password file must be hashed first).
    case unrecognizedFormat
    /// The iteration count is not an integer in 1...``PasswordHash/maximumIterations``.
    case invalidIterations(String)
    /// The salt or the hash is not valid base64, or the salt is empty.
    case invalidBase64
    /// The hash does not have SHA-512's 64 bytes.
    case invalidHashLength(Int)

    public var description: String {
        switch self {
        case .unrecognizedFormat: return "not a mosquitto password hash ($7$ITERATIONS$SALT$HASH or $6$SALT$HASH)"
        case .invalidIterations(let value): return "invalid iteration count '\(value)'"
        case .invalidBase64: return "salt or hash is not valid base64"
        case .invalidHashLength(let count): return "hash has \(count) bytes, expected 64"
        }
    }
}
