import Foundation
import NIOSSL

/// Builds the `NIOSSLContext` of a TLS listener from its ``BrokerTLSConfiguration``, loading each file itself so
/// that an error names the file at fault. Built once per listener when the broker starts, shared by all of the
/// listener's connections. Does blocking file I/O: call it off the event loops.
enum TLSServerContext {
    static func make(_ tls: BrokerTLSConfiguration) throws(BrokerTLSError) -> NIOSSLContext {
        if tls.requireCertificate, tls.caFile == nil { throw .requireCertificateWithoutCAFile }
        if tls.useIdentityAsUsername, !tls.requireCertificate { throw .identityWithoutRequiredCertificate }

        let chain: [NIOSSLCertificate]
        do {
            chain = try loadCertificates(tls.certificateFile)
        } catch {
            throw .invalidCertificateFile(path: tls.certificateFile, reason: error.reason)
        }
        let key: NIOSSLPrivateKey
        do {
            key = try loadPrivateKey(tls.privateKeyFile)
        } catch {
            throw .invalidPrivateKeyFile(path: tls.privateKeyFile, reason: error.reason)
        }
        var authorities: [NIOSSLCertificate]?
        if let caFile = tls.caFile {
            do {
                authorities = try loadCertificates(caFile)
            } catch {
                throw .invalidCAFile(path: caFile, reason: error.reason)
            }
        }

        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = tls.minimumVersion == .tls1_3 ? .tlsv13 : .tlsv12
        // Never the system trust store: only the configured CA signs client certificates.
        configuration.trustRoots = .certificates(authorities ?? [])
        if tls.requireCertificate {
            configuration.certificateVerification = .noHostnameVerification
        } else if authorities != nil {
            // Like mosquitto with a cafile: a certificate that is presented must verify; none is fine.
            configuration.certificateVerification = .optionalVerification
        } else {
            configuration.certificateVerification = .none
        }
        configuration.sendCANameList = authorities != nil
        // How long a closing connection waits for the client's close_notify: bounds broker shutdown and the
        // close of a client that stopped reading (mosquitto does not wait at all).
        configuration.shutdownTimeout = .seconds(1)
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .unusableCertificateAndKey(
                certificateFile: tls.certificateFile, privateKeyFile: tls.privateKeyFile, reason: "\(error)")
        }
    }

    /// Why a file could not be loaded, in words for the error message.
    struct LoadFailure: Error {
        let reason: String
    }

    private static func loadCertificates(_ path: String) throws(LoadFailure) -> [NIOSSLCertificate] {
        try checkReadable(path)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw LoadFailure(reason: "not a PEM certificate file (\(error))")
        }
        guard !certificates.isEmpty else { throw LoadFailure(reason: "holds no PEM certificate") }
        return certificates
    }

    private static func loadPrivateKey(_ path: String) throws(LoadFailure) -> NIOSSLPrivateKey {
        try checkReadable(path)
        do {
            return try NIOSSLPrivateKey(file: path, format: .pem)
        } catch {
            throw LoadFailure(reason: "not an unencrypted PEM private key (\(error))")
        }
    }

    private static func checkReadable(_ path: String) throws(LoadFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw LoadFailure(reason: "no such file")
        }
        guard !isDirectory.boolValue else { throw LoadFailure(reason: "is a directory") }
        guard FileManager.default.isReadableFile(atPath: path) else { throw LoadFailure(reason: "not readable") }
    }
}
