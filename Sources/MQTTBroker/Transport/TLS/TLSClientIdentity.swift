import MQTTCore
import NIOSSL

/// The identity a client proved with its certificate, passed from the TLS layer to the MQTT connection as a user
/// inbound event once the handshake has completed (before any MQTT byte), on listeners with
/// `use_identity_as_username`.
struct TLSClientIdentity: Sendable, Hashable {
    /// The first common name (CN) of the certificate's subject; nil when there is no certificate or no CN.
    let commonName: String?

    init(commonName: String?) {
        self.commonName = commonName
    }

    /// The identity in `certificate`, as mosquitto reads it: the first CN entry of the subject.
    init(certificate: NIOSSLCertificate?) {
        let name = certificate?.subjectName.first { $0.type == .commonName }?.value
        self.init(commonName: name.flatMap { $0.isEmpty ? nil : $0 })
    }
}

extension TLSClientIdentity {
    /// `connect` with the certificate's CN as user name and no password (mosquitto's `use_identity_as_username`);
    /// nil when the certificate has no CN, which refuses the client.
    func applied(to connect: ConnectPacket) -> ConnectPacket? {
        guard let commonName else { return nil }
        var connect = connect
        connect.username = commonName
        connect.password = nil
        return connect
    }
}
