/// Why the TLS settings of a listener cannot be used. Each case names the file at fault.
public enum BrokerTLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server certificate file (`certfile`) is missing, unreadable or holds no PEM certificate.
    case invalidCertificateFile(path: String, reason: String)
    /// The private key file (`keyfile`) is missing, unreadable or holds no PEM private key.
    case invalidPrivateKeyFile(path: String, reason: String)
    /// The certificate authority file (`cafile`) is missing, unreadable or holds no PEM certificate.
    case invalidCAFile(path: String, reason: String)
    /// The files load, but no TLS context can be built from them (for example the key does not belong to the
    /// certificate).
    case unusableCertificateAndKey(certificateFile: String, privateKeyFile: String, reason: String)
    /// `requireCertificate` is set without a `caFile` to check client certificates against.
    case requireCertificateWithoutCAFile
    /// `useIdentityAsUsername` is set without `requireCertificate`: there would be no identity to use.
    case identityWithoutRequiredCertificate

    public var description: String {
        switch self {
        case .invalidCertificateFile(let path, let reason):
            return "certfile \(path): \(reason)"
        case .invalidPrivateKeyFile(let path, let reason):
            return "keyfile \(path): \(reason)"
        case .invalidCAFile(let path, let reason):
            return "cafile \(path): \(reason)"
        case .unusableCertificateAndKey(let certificateFile, let privateKeyFile, let reason):
            return "certfile \(certificateFile) and keyfile \(privateKeyFile) cannot be used together: \(reason)"
        case .requireCertificateWithoutCAFile:
            return "require_certificate true needs a cafile to check client certificates against"
        case .identityWithoutRequiredCertificate:
            return "use_identity_as_username true needs require_certificate true"
        }
    }
}
