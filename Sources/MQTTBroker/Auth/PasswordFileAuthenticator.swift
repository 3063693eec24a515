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

    /// Whether `username` is in the file and `password` matches its hash.
    public func authenticate(username: String, password: [UInt8]?, clientIdentifier: String) -> Bool {
        guard let stored = hashes[username], let password else {
            _ = dummy.verify(password ?? [])
            return false
        }
        return stored.verify(password)
    }
}
