/// The TLS options of one `listener` block of a config file, collected line by line with the line each came
/// from, then checked and turned into a ``BrokerTLSConfiguration`` once the whole file is read (mosquitto applies
/// these options to the listener they follow, in any order). Errors name the line of the option at fault.
struct ListenerTLSDraft {
    /// The options collected here.
    static let options: Set<String> = [
        "certfile", "keyfile", "cafile", "require_certificate", "use_identity_as_username", "tls_version",
    ]

    private struct Setting<Value> {
        let value: Value
        let line: ConfigLine
    }

    private var certificateFile: Setting<String>?
    private var privateKeyFile: Setting<String>?
    private var caFile: Setting<String>?
    private var requireCertificate: Setting<Bool>?
    private var useIdentityAsUsername: Setting<Bool>?
    private var minimumVersion: Setting<BrokerTLSConfiguration.MinimumVersion>?

    /// Records one option line; a repeated option replaces the earlier one, as in mosquitto.
    mutating func record(_ option: String, _ line: ConfigLine) throws(BrokerConfigError) {
        switch option {
        case "certfile": certificateFile = Setting(value: try line.single(), line: line)
        case "keyfile": privateKeyFile = Setting(value: try line.single(), line: line)
        case "cafile": caFile = Setting(value: try line.single(), line: line)
        case "require_certificate": requireCertificate = Setting(value: try line.bool(line.single()), line: line)
        case "use_identity_as_username": useIdentityAsUsername = Setting(value: try line.bool(line.single()), line: line)
        case "tls_version":
            let value = try line.single()
            guard let version = BrokerTLSConfiguration.MinimumVersion(rawValue: value) else {
                throw .invalidValue(
                    source: line.source, line: line.number, option: option, value: value,
                    expected: "tlsv1.2 or tlsv1.3")
            }
            minimumVersion = Setting(value: version, line: line)
        default:
            throw .unknownOption(source: line.source, line: line.number, option: option)
        }
    }

    /// The listener's TLS configuration, with every file loaded once to check it; nil when no option was given.
    func finish() throws(BrokerConfigError) -> BrokerTLSConfiguration? {
        guard let certificateFile, let privateKeyFile else {
            if let lone = certificateFile?.line ?? privateKeyFile?.line {
                let missing = certificateFile == nil ? "certfile" : "keyfile"
                throw invalid(lone, "needs a \(missing) in the same listener (certfile and keyfile make a listener TLS)")
            }
            if let stray = [caFile?.line, requireCertificate?.line, useIdentityAsUsername?.line, minimumVersion?.line]
                .compactMap({ $0 }).min(by: { $0.number < $1.number })
            {
                throw invalid(stray, "is a TLS option, but this listener has no certfile and keyfile")
            }
            return nil
        }
        let tls = BrokerTLSConfiguration(
            certificateFile: certificateFile.value,
            privateKeyFile: privateKeyFile.value,
            caFile: caFile?.value,
            requireCertificate: requireCertificate?.value ?? false,
            useIdentityAsUsername: useIdentityAsUsername?.value ?? false,
            minimumVersion: minimumVersion?.value ?? .tls1_2
        )
        do {
            try tls.validate()
        } catch {
            throw configError(for: error, certificateFile: certificateFile.line, privateKeyFile: privateKeyFile.line)
        }
        return tls
    }

    /// Maps a loading error onto the line of the option that names the file (or sets the flag) at fault.
    private func configError(
        for error: BrokerTLSError, certificateFile: ConfigLine, privateKeyFile: ConfigLine
    ) -> BrokerConfigError {
        switch error {
        case .invalidCertificateFile(_, let reason):
            return fileError(certificateFile, reason)
        case .invalidPrivateKeyFile(_, let reason):
            return fileError(privateKeyFile, reason)
        case .invalidCAFile(_, let reason):
            return fileError(caFile?.line ?? certificateFile, reason)
        case .unusableCertificateAndKey(let certificatePath, _, let reason):
            return fileError(privateKeyFile, "cannot be used with certfile \(certificatePath) (\(reason))")
        case .requireCertificateWithoutCAFile:
            return invalid(requireCertificate?.line ?? certificateFile, "true needs a cafile in the same listener")
        case .identityWithoutRequiredCertificate:
            return invalid(
                useIdentityAsUsername?.line ?? certificateFile, "true needs require_certificate true in the same listener")
        }
    }

    private func fileError(_ line: ConfigLine, _ reason: String) -> BrokerConfigError {
        .invalidFile(source: line.source, line: line.number, option: line.option ?? "", reason: "\(line.rawValues.first ?? ""): \(reason)")
    }

    private func invalid(_ line: ConfigLine, _ reason: String) -> BrokerConfigError {
        .invalidTLSSettings(source: line.source, line: line.number, option: line.option ?? "", reason: reason)
    }
}
