import Foundation
import MQTTCore

/// MQTT 5 enhanced authentication (MQTT 5.0 section 4.12, AUTH section 3.15): SCRAM-SHA-512 over the users of the
/// `password_file`. CONNECT names the method and brings client-first; the broker answers AUTH 0x18 with
/// server-first; the client's AUTH 0x18 brings client-final; CONNACK carries server-final. Any other method gets
/// CONNACK 0x8C; an AUTH outside such an exchange (re-authentication included) is a protocol error.
enum AuthHandler {
    /// A CONNECT that names an authentication method.
    static func start(_ connect: ConnectPacket, on connection: BrokerConnectionHandler) {
        let method = connect.properties.authenticationMethod ?? ""
        guard method == ScramServerExchange.method, connect.protocolVersion == .v5,
            let authenticator = connection.core.configuration.authenticator as? PasswordFileAuthenticator
        else {
            connection.logger.notice("CONNECT refused: unsupported authentication method", metadata: ["method": "\(method)"])
            ConnectHandler.refuse(.badAuthenticationMethod, on: connection)
            return
        }
        let nonce = Data((0..<18).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let clientFirst = connect.properties.authenticationData ?? []
        switch ScramServerExchange.start(clientFirst: clientFirst, lookup: authenticator.scramCredentials(for:), serverNonce: nonce) {
        case .failure(let error):
            connection.logger.notice("CONNECT refused: bad SCRAM client-first", metadata: ["error": "\(error)"])
            ConnectHandler.refuse(.notAuthorized, on: connection)
        case .success(let (exchange, serverFirst)):
            connection.pendingAuthentication = PendingAuthentication(connect: connect, exchange: exchange)
            connection.decodeVersion5BeforeConnAck()
            connection.write(AuthPacket(
                reasonCode: .continueAuthentication,
                properties: MQTTProperties([.authenticationMethod(method), .authenticationData(serverFirst)])))
        }
    }

    /// An AUTH packet from the client.
    static func handle(_ auth: AuthPacket, on connection: BrokerConnectionHandler) {
        guard let pending = connection.pendingAuthentication, auth.reasonCode == .continueAuthentication,
            auth.properties.authenticationMethod == ScramServerExchange.method
        else {
            connection.close(.protocolViolation(.unexpectedAuth))
            return
        }
        connection.pendingAuthentication = nil
        switch pending.exchange.finish(clientFinal: auth.properties.authenticationData ?? []) {
        case .failure(let error):
            connection.logger.notice(
                "CONNECT refused: SCRAM authentication failed",
                metadata: ["user": "\(pending.exchange.username)", "error": "\(error)"])
            ConnectHandler.refuse(.badUserNameOrPassword, on: connection)
        case .success(let serverFinal):
            var connect = pending.connect
            connect.username = pending.exchange.username  // the identity the ACL applies to
            connect.password = nil
            ConnectHandler.proceed(
                connect, on: connection, enhancedAuthentication: true,
                extraProperties: [.authenticationMethod(ScramServerExchange.method), .authenticationData(serverFinal)])
        }
    }
}

/// A CONNECT waiting for the client's next AUTH. A class: the connection holds one pointer to it, not a CONNECT
/// and an exchange inline, so idle connections (which never authenticate this way) stay as small as before.
final class PendingAuthentication: Sendable {
    let connect: ConnectPacket
    let exchange: ScramServerExchange

    init(connect: ConnectPacket, exchange: ScramServerExchange) {
        self.connect = connect
        self.exchange = exchange
    }
}
