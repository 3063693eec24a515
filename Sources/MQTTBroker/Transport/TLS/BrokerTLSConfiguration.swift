/// TLS settings of one listener (mosquitto's `certfile`, `keyfile`, `cafile`, `require_certificate`,
/// `use_identity_as_username`, `tls_version`). A listener with a `BrokerTLSConfiguration` only speaks TLS: a plain
/// MQTT client on its port fails the handshake and is disconnected.
///
/// The value only names files. ``MQTTBrokerServer/start()`` loads them and builds one TLS context per listener;
/// ``validate()`` does the same ahead of time, so a configuration parser can report a bad file at once.
public struct BrokerTLSConfiguration: Sendable, Hashable {
    /// The oldest TLS version a listener accepts (mosquitto's `tls_version`).
    public enum MinimumVersion: String, Sendable, Hashable, CaseIterable {
        /// TLS 1.2 and 1.3 (the default).
        case tls1_2 = "tlsv1.2"
        /// TLS 1.3 only.
        case tls1_3 = "tlsv1.3"
    }

    /// PEM file with the server certificate, optionally followed by its intermediate certificates (`certfile`).
    public var certificateFile: String
    /// PEM file with the private key of ``certificateFile``, unencrypted (`keyfile`).
    public var privateKeyFile: String
    /// PEM file with the certificate authorities that sign client certificates (`cafile`). When set, a client
    /// certificate that is presented must be signed by one of them.
    public var caFile: String?
    /// Whether clients must present a certificate signed by ``caFile`` (`require_certificate`); clients without
    /// one are refused during the handshake.
    public var requireCertificate: Bool
    /// Whether the common name (CN) of the client certificate replaces the user name of CONNECT
    /// (`use_identity_as_username`). The CONNECT user name and password are then ignored, the password file is
    /// not consulted, and ACL `%u` patterns see the CN. Needs ``requireCertificate``.
    public var useIdentityAsUsername: Bool
    /// The oldest TLS version accepted.
    public var minimumVersion: MinimumVersion

    /// Creates the TLS settings of a listener.
    public init(
        certificateFile: String,
        privateKeyFile: String,
        caFile: String? = nil,
        requireCertificate: Bool = false,
        useIdentityAsUsername: Bool = false,
        minimumVersion: MinimumVersion = .tls1_2
    ) {
        self.certificateFile = certificateFile
        self.privateKeyFile = privateKeyFile
        self.caFile = caFile
        self.requireCertificate = requireCertificate
        self.useIdentityAsUsername = useIdentityAsUsername
        self.minimumVersion = minimumVersion
    }

    /// Loads every file and builds the TLS context the listener would use, then discards it: throws what
    /// ``MQTTBrokerServer/start()`` would throw for this listener. Does blocking file I/O; keep it off event loops.
    public func validate() throws(BrokerTLSError) {
        _ = try TLSServerContext.make(self)
    }
}
