import Foundation
import Testing

@testable import MQTTBroker

/// SCRAM-SHA-512 on the server side, against a client computed here from RFC 5802's definitions.
@Suite("SCRAM-SHA-512")
struct ScramTests {
    /// The client's side of the exchange, from the password.
    struct Client {
        let user: String
        let password: String
        let nonce = "rOprNGfwEbeRWgbNEkqO"

        var clientFirstBare: String { "n=\(user),r=\(nonce)" }
        var clientFirst: [UInt8] { Array("n,,\(clientFirstBare)".utf8) }

        /// client-final for `serverFirst`, and the server signature it expects back.
        func final(for serverFirst: String) -> (message: [UInt8], serverSignature: [UInt8])? {
            var attributes: [String: String] = [:]
            for field in serverFirst.split(separator: ",") { attributes[String(field.prefix(1))] = String(field.dropFirst(2)) }
            guard let nonce = attributes["r"], let saltText = attributes["s"], let salt = Data(base64Encoded: saltText),
                let iterations = attributes["i"].flatMap(Int.init)
            else { return nil }
            let salted = PBKDF2SHA512.derive(password: Array(password.utf8), salt: Array(salt), iterations: iterations, length: 64)
            let clientKey = HMACSHA512(key: salted).authenticationCode(for: Array("Client Key".utf8))
            let storedKey = SHA512.hash(clientKey)
            let withoutProof = "c=biws,r=\(nonce)"
            let authMessage = Array("\(clientFirstBare),\(serverFirst),\(withoutProof)".utf8)
            let signature = HMACSHA512(key: storedKey).authenticationCode(for: authMessage)
            let proof = zip(clientKey, signature).map { $0 ^ $1 }
            let serverKey = HMACSHA512(key: salted).authenticationCode(for: Array("Server Key".utf8))
            let serverSignature = HMACSHA512(key: serverKey).authenticationCode(for: authMessage)
            return (Array("\(withoutProof),p=\(Data(proof).base64EncodedString())".utf8), serverSignature)
        }
    }

    let authenticator: PasswordFileAuthenticator = {
        var file = PasswordFile()
        file.set("alice", hash: PasswordHash(password: Array("s3cret".utf8)))
        return PasswordFileAuthenticator(file: file)
    }()

    func run(_ client: Client) -> Result<[UInt8], ScramError> {
        switch ScramServerExchange.start(
            clientFirst: client.clientFirst, lookup: authenticator.scramCredentials(for:), serverNonce: "3rfcNHYJY1ZVvWVs7j")
        {
        case .failure(let error): return .failure(error)
        case .success(let (exchange, serverFirst)):
            #expect(exchange.username == client.user)
            guard let final = client.final(for: String(decoding: serverFirst, as: UTF8.self)) else {
                return .failure(.malformed("test client could not read server-first"))
            }
            return exchange.finish(clientFinal: final.message).map { serverFinal in
                #expect(String(decoding: serverFinal, as: UTF8.self) == "v=\(Data(final.serverSignature).base64EncodedString())")
                return serverFinal
            }
        }
    }

    @Test("the right password proves itself, and the server proves it knows the salted password")
    func success() {
        guard case .success = run(Client(user: "alice", password: "s3cret")) else {
            Issue.record("alice was refused")
            return
        }
    }

    @Test("a wrong password or an unknown user fails at the proof, not before")
    func failures() {
        #expect(run(Client(user: "alice", password: "wrong")) == .failure(.authenticationFailed))
        #expect(run(Client(user: "mallory", password: "s3cret")) == .failure(.authenticationFailed))
    }

    @Test("malformed messages are refused: channel binding, no nonce, a bad escape, another nonce")
    func malformed() {
        let lookup = authenticator.scramCredentials(for:)
        for message in ["y,,n=alice,r=x", "n,,n=alice", "n,,n=al=ZZice,r=x", "n,,r=x"] {
            guard case .failure(.malformed) = ScramServerExchange.start(
                clientFirst: Array(message.utf8), lookup: lookup, serverNonce: "s")
            else {
                Issue.record("\(message) was accepted")
                continue
            }
        }
        guard case .success(let (exchange, _)) = ScramServerExchange.start(
            clientFirst: Array("n,,n=alice,r=abc".utf8), lookup: lookup, serverNonce: "def")
        else {
            Issue.record("valid client-first refused")
            return
        }
        #expect(exchange.finish(clientFinal: Array("c=biws,r=other,p=AAAA".utf8)) == .failure(.malformed("client-final has another nonce")))
    }

    @Test("a $6$ (mosquitto 1.x) hash has no salted password to offer")
    func oldHashes() throws {
        let file = try PasswordFile(parsing: "old:$6$c2FsdA==$" + Data(repeating: 1, count: 64).base64EncodedString())
        #expect(PasswordFileAuthenticator(file: file).scramCredentials(for: "old") == nil)
    }
}
