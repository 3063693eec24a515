/// Checks CONNECT credentials against a ``PasswordFile`` (the `password_file` option).
///
/// A user that is not in the file, or a CONNECT without a password, is refused, after hashing against a dummy
/// entry so that the answer takes as long as for a known user (no user enumeration by timing).
public struct PasswordFileAuthenticator: MQTTBrokerAuthenticator {
    private let hashes: [String: PasswordHash]
    private let dummy = PasswordHash(password: [], salt: [UInt8](repeating: 0, count: PasswordHash.defaultSaltLength))

    /// Creates an authenticator over the users of `file`.
    public init(file: PasswordFile) {
        var hashes: [String: PasswordHash] = [:]
        for entry in file.entries {
            hashes[entry.username] = entry.hash
        }
        self.hashes = hashes
    }

    /// The SCRAM-SHA-512 credentials of `username`: only a `$7$` (PBKDF2) hash is a salted password; nil for an
    /// unknown user or a `$6$` hash (mosquitto 1.x), which can only be checked against a plain password.
    public func scramCredentials(for username: String) -> ScramCredentials? {
        guard let stored = hashes[username], case .pbkdf2SHA512(let iterations) = stored.algorithm else { return nil }
        return ScramCredentials(saltedPassword: stored.hash, salt: stored.salt, iterations: iterations)
    }

    /// Whether `username` is in the file and `password` matches its hash.
    public func authenticate(username: String, password: [UInt8]?, clientIdentifier: String) -> Bool {
        guard let stored = hashes[username], let password else {
            _ = dummy.verify(password ?? [])
            return false
        }
        return stored.verify(password)
    }
}
