import Foundation
import LiveTestSupport
import MQTTCore
import NIOCore
import NIOPosix
import Testing

@testable import MQTTBroker

/// TLS listeners over real sockets: the misbehaving clients are raw connections, the TLS clients are
/// `mosquitto_pub`, and subscribers sit on a plain listener of the same broker.
@Suite("TLS listeners", .timeLimit(.minutes(1)))
struct TLSListenerTests {
    /// Runs `body` with a broker that has a plain listener and a TLS listener, both on ephemeral ports, with its
    /// sockets on `socketLoops` loops of their own (so with 2 every connection goes through a ConnectionRelay, with 1
    /// every connection sits in its pipeline on the core's loop).
    private func withTLSBroker(
        socketLoops: Int,
        _ tls: BrokerTLSConfiguration,
        _ configure: (inout BrokerConfiguration) -> Void = { _ in },
        _ body: (_ plain: SocketAddress, _ tls: SocketAddress) async throws -> Void
    ) async throws {
        try await withEventLoopGroup(threads: 1) { group in
            try await withLiveBroker(
                {
                    $0.listeners = [.init(port: 0), .init(port: 0, tls: tls)]
                    $0.eventLoopCount = socketLoops
                    configure(&$0)
                }, eventLoopGroup: group
            ) { server, _ in
                let addresses = try await server.start()
                try await body(addresses[0], addresses[1])
            }
        }
    }

    @Test("a client that opens the TLS port and never finishes the handshake is closed by connect_timeout",
          arguments: [1, 2])
    func silentClient(socketLoops: Int) async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        let tls = BrokerTLSConfiguration(certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key"))
        try await withTLSBroker(socketLoops: socketLoops, tls, { $0.connectTimeout = .milliseconds(700) }) { _, tlsAddress in
            // Taken before connecting: the broker accepts (and starts the 700 ms timeout) only after this.
            let beforeConnecting = ContinuousClock.now
            let silent = try await RawConnection.open(to: tlsAddress)
            // Half a handshake is no better than none: a ClientHello record header and nothing more.
            let half = try await RawConnection.open(to: tlsAddress)
            try await half.send([0x16, 0x03, 0x01, 0x02, 0x00])
            #expect(await silent.closedByBroker(within: .seconds(4)))
            #expect(await half.closedByBroker(within: .seconds(1)))
            // Closed by the timeout, not at once (the margin below 700 ms only covers the two clocks).
            #expect(ContinuousClock.now - beforeConnecting >= .milliseconds(650))
            await silent.close()
            await half.close()
        }
    }

    @Test("plain MQTT on the TLS port closes that connection only; TLS clients are still served", arguments: [1, 2])
    func plainClientOnTLSPort(socketLoops: Int) async throws {
        let pki = try await TestCertificates.make()
        defer { pki.remove() }
        let tls = BrokerTLSConfiguration(certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key"))
        try await withTLSBroker(socketLoops: socketLoops, tls) { plainAddress, tlsAddress in
            let (subscriber, _) = try await LiveClient.connect(to: plainAddress, ConnectPacket(clientIdentifier: "sub"))
            #expect(try await subscriber.subscribe("tls/#", qos: .atLeastOnce).returnCodes == [.granted(.atLeastOnce)])

            let plain = try await RawConnection.open(to: tlsAddress)
            var connect = ByteBuffer()
            try MQTTPacketEncoder.encode(.connect(ConnectPacket(clientIdentifier: "plain")), into: &connect)
            try await plain.send(Array(connect.readableBytesView))
            #expect(await plain.closedByBroker(within: .seconds(5)))
            let answer = try await plain.received()
            #expect(answer.first != 0x20, "a plain client got a CONNACK from the TLS port: \(answer)")
            await plain.close()

            let published = try await runProcess(
                "/usr/bin/mosquitto_pub",
                ["-h", "127.0.0.1", "-p", tlsAddress.portString, "--cafile", pki.path("ca.crt"),
                 "-t", "tls/after", "-q", "1", "-m", "still served"])
            #expect(published.status == 0, "\(published.output)")
            let message = try await subscriber.nextPublish()
            #expect(message.topic == "tls/after")
            #expect(String(buffer: message.payload) == "still served")
            await subscriber.close()
        }
    }

    @Test("use_identity_as_username: the certificate CN is the user name for ACL %u, CONNECT's is ignored",
          arguments: [1, 2])
    func identityAsUsername(socketLoops: Int) async throws {
        let pki = try await TestCertificates.make(clients: ["alice"])
        defer { pki.remove() }
        let tls = BrokerTLSConfiguration(
            certificateFile: pki.path("server.crt"), privateKeyFile: pki.path("server.key"), caFile: pki.path("ca.crt"),
            requireCertificate: true, useIdentityAsUsername: true)
        let acl = try AccessControlList(parsing: "topic read #\npattern write users/%u/#\n")
        try await withTLSBroker(socketLoops: socketLoops, tls, { $0.accessControl = acl }) { plainAddress, tlsAddress in
            let (subscriber, _) = try await LiveClient.connect(to: plainAddress, ConnectPacket(clientIdentifier: "sub"))
            #expect(try await subscriber.subscribe("users/#", qos: .atLeastOnce).returnCodes == [.granted(.atLeastOnce)])
            let alice = ["-h", "127.0.0.1", "-p", tlsAddress.portString, "--cafile", pki.path("ca.crt"),
                         "--cert", pki.path("alice.crt"), "--key", pki.path("alice.key"), "-q", "1", "-u", "bob"]
            // Claims to be bob, but is alice: bob's topic is not writable, alice's is.
            let asBob = try await runProcess("/usr/bin/mosquitto_pub", alice + ["-t", "users/bob/inbox", "-m", "denied"])
            let asAlice = try await runProcess("/usr/bin/mosquitto_pub", alice + ["-t", "users/alice/inbox", "-m", "allowed"])
            #expect(asBob.status == 0, "\(asBob.output)")
            #expect(asAlice.status == 0, "\(asAlice.output)")
            let message = try await subscriber.nextPublish()
            #expect(message.topic == "users/alice/inbox")
            #expect(String(buffer: message.payload) == "allowed")

            let withoutCertificate = try await runProcess(
                "/usr/bin/mosquitto_pub",
                ["-h", "127.0.0.1", "-p", tlsAddress.portString, "--cafile", pki.path("ca.crt"), "-q", "1",
                 "-u", "alice", "-t", "users/alice/inbox", "-m", "no certificate"])
            #expect(withoutCertificate.status != 0, "a client without certificate got in: \(withoutCertificate.output)")
            await #expect(throws: LiveClientError.timedOut) { try await subscriber.nextPublish(timeout: .milliseconds(300)) }
            await subscriber.close()
        }
    }

    @Test("the CN replaces CONNECT's user name and password; no CN means no user name, so CONNECT is refused")
    func identityWithoutCommonName() throws {
        let identity = TLSClientIdentity(commonName: nil)
        #expect(identity.applied(to: ConnectPacket(clientIdentifier: "c", username: "u")) == nil)
        let named = TLSClientIdentity(commonName: "alice").applied(to: ConnectPacket(clientIdentifier: "c", username: "bob", password: [1]))
        #expect(named?.username == "alice")
        #expect(named?.password == nil)
    }
}
