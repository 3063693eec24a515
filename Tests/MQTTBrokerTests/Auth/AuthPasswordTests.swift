import Foundation
import LiveTestSupport
import Testing

@testable import MQTTBroker

/// Hex of a byte array, for comparing digests with published vectors.
private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

@Suite("Auth: SHA-512, PBKDF2 and mosquitto password files")
struct AuthPasswordTests {
    @Test("SHA-512 matches the FIPS 180-4 examples, across block boundaries")
    func sha512Vectors() {
        #expect(hex(SHA512.hash([])).hasPrefix("cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"))
        #expect(hex(SHA512.hash(Array("abc".utf8))) == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        let twoBlocks = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(SHA512.hash(Array(twoBlocks.utf8))) == "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909")
        let thousand = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        let expected = "67ba5535a46e3f86dbfbed8cbbaf0125c76ed549ff8b0b9e03e0c88cf90fa634fa7b12b47d77b694de488ace8d9a65967dc96df599727d3292a8d9d447709c97"
        #expect(hex(SHA512.hash(thousand)) == expected)
        // Fed in uneven pieces, the incremental hasher gives the same digest.
        var hasher = SHA512()
        hasher.update(Array(thousand[0..<1]))
        hasher.update(Array(thousand[1..<300]))
        hasher.update(Array(thousand[300...]))
        #expect(hex(hasher.finalize()) == expected)
    }

    @Test("PBKDF2-HMAC-SHA512 matches Python's hashlib.pbkdf2_hmac, including a key longer than a block")
    func pbkdf2Vectors() {
        let one = PBKDF2SHA512.derive(password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1, length: 64)
        #expect(hex(one) == "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce")
        let two = PBKDF2SHA512.derive(password: Array("password".utf8), salt: Array("salt".utf8), iterations: 2, length: 64)
        #expect(hex(two) == "e1d9c16aa681708a45f5c7c4e215ceb66e011a2e9f0040713f18aefdb866d53cf76cab2868a39b9f7840edce4fef5a82be67335c77a6068e04112754f27ccf4e")
        let longKey = PBKDF2SHA512.derive(
            password: [UInt8](repeating: UInt8(ascii: "k"), count: 200), salt: Array("NaCl".utf8), iterations: 3, length: 64)
        #expect(hex(longKey) == "459d67075b280a0e3ea741869225c39f8c4ddab81df42747c773d450329d54b259e1d6cc5eb86a3f343597f414a30856ec0df0205093d25249acb78cce096f15")
    }

    /// Written by `/usr/bin/mosquitto_passwd -b` (mosquitto 2.0.11) for alice / "correct horse" and
    /// bob / "b0b:pa$$"; carol is the old `$6$` format (SHA512(password + salt)) for "legacy pw".
    static let mosquittoFile = """
        # users
        alice:$7$101$+WjVruRW7w1xxLuQ$/U/c/cZeMdLKtDkmSupWSaRkTA7Gys6IN2uDgotF2DWjQlTT9wGTwDU5jzVF8RVO+aLzk8GhB0lsD5vP1QiHAA==
        bob:$7$101$n5iyY3JpfkWJqNiD$Add+YVgDkFxHsdetlSw2VhIVnG0LWcP1z9qrD1nmr0BroEZoGGwpVQKpw0uR3hjoUrI6DIFuXrsv1Ln8UO/L3Q==

        carol:$6$MDEyMzQ1Njc4OWFi$yc9ou9TBxGl559buvLqo6utyhUJZcYRaHeVVa9VYhl2m72EQ1WYXG05AvrCOCXam3oTQL8WA2JjZXAxzJl4+WA==
        """

    @Test("a password file with Windows line endings keeps each user's hash intact")
    func windowsLineEndings() throws {
        let text = Self.mosquittoFile.replacingOccurrences(of: "\n", with: "\r\n")
        let file = try PasswordFile(parsing: text)
        #expect(file.entries.map(\.username) == ["alice", "bob", "carol"])
        let authenticator = PasswordFileAuthenticator(file: file)
        #expect(authenticator.authenticate(username: "alice", password: Array("correct horse".utf8), clientIdentifier: "x"))
        #expect(authenticator.authenticate(username: "carol", password: Array("legacy pw".utf8), clientIdentifier: "x"))
    }

    @Test("a file written by mosquitto_passwd verifies the right passwords and refuses others")
    func mosquittoWrittenFile() throws {
        let file = try PasswordFile(parsing: Self.mosquittoFile)
        #expect(file.entries.map(\.username) == ["alice", "bob", "carol"])
        #expect(file["alice"]?.algorithm == .pbkdf2SHA512(iterations: 101))
        #expect(file["carol"]?.algorithm == .saltedSHA512)
        let authenticator = PasswordFileAuthenticator(file: file)
        #expect(authenticator.authenticate(username: "alice", password: Array("correct horse".utf8), clientIdentifier: "x"))
        #expect(authenticator.authenticate(username: "bob", password: Array("b0b:pa$$".utf8), clientIdentifier: "x"))
        #expect(authenticator.authenticate(username: "carol", password: Array("legacy pw".utf8), clientIdentifier: "x"))
        #expect(!authenticator.authenticate(username: "alice", password: Array("correct horsE".utf8), clientIdentifier: "x"))
        #expect(!authenticator.authenticate(username: "alice", password: nil, clientIdentifier: "x"))
        #expect(!authenticator.authenticate(username: "carol", password: Array("legacy".utf8), clientIdentifier: "x"))
        #expect(!authenticator.authenticate(username: "mallory", password: Array("correct horse".utf8), clientIdentifier: "x"))
    }

    @Test(
        "a file made now by the installed mosquitto_passwd is accepted",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/mosquitto_passwd")))
    func liveMosquittoPasswd() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UUID().uuidString).passwd").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try await runProcess("/usr/bin/mosquitto_passwd", ["-b", "-c", path, "dave", "s3cr3t with spaces"])
        #expect(result.status == 0, "\(result.output)")
        let authenticator = PasswordFileAuthenticator(file: try PasswordFile.load(path: path))
        #expect(authenticator.authenticate(username: "dave", password: Array("s3cr3t with spaces".utf8), clientIdentifier: "d"))
        #expect(!authenticator.authenticate(username: "dave", password: Array("s3cr3t".utf8), clientIdentifier: "d"))
    }

    @Test("new hashes use mosquitto 2.0's format and round-trip through the file text")
    func newHashes() throws {
        let hash = PasswordHash(password: Array("pw".utf8))
        #expect(hash.algorithm == .pbkdf2SHA512(iterations: 101))
        #expect(hash.salt.count == 12)
        #expect(hash.encoded.hasPrefix("$7$101$"))
        #expect(hash.encoded.split(separator: "$").map(\.count) == [1, 3, 16, 88])
        #expect(PasswordHash(password: Array("pw".utf8)).salt != hash.salt, "salts are random")
        var file = PasswordFile()
        file.set("eve", hash: hash)
        file.set("frank", hash: PasswordHash(password: Array("f".utf8)))
        file.set("eve", hash: PasswordHash(password: Array("new".utf8)))
        let reread = try PasswordFile(parsing: file.encoded)
        #expect(reread.entries.map(\.username) == ["eve", "frank"])
        #expect(reread["eve"]?.verify(Array("new".utf8)) == true)
        #expect(reread["eve"]?.verify(Array("pw".utf8)) == false)
        let removed = file.remove("frank")
        let removedAgain = file.remove("frank")
        #expect(removed && !removedAgain)
    }

    @Test("malformed lines are typed errors with the line number")
    func malformed() {
        let cases: [(String, PasswordFileError)] = [
            ("alice", .malformedLine(source: "p", line: 1, reason: "expected username:hash")),
            ("\nalice:plaintext", .malformedLine(source: "p", line: 2, reason: PasswordHashError.unrecognizedFormat.description)),
            ("a:$7$0$AAAA$AAAA", .malformedLine(source: "p", line: 1, reason: PasswordHashError.invalidIterations("0").description)),
            ("a:$7$101$!!$AAAA", .malformedLine(source: "p", line: 1, reason: PasswordHashError.invalidBase64.description)),
            ("a:$7$101$AAAA$AAAA", .malformedLine(source: "p", line: 1, reason: PasswordHashError.invalidHashLength(3).description)),
            (":$6$AAAA$AAAA", .malformedLine(source: "p", line: 1, reason: "expected username:hash")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try PasswordFile(parsing: text, source: "p") }
        }
        let line = "alice:" + PasswordHash(password: []).encoded
        let duplicate = line + "\n" + line
        #expect(throws: PasswordFileError.duplicateUser(source: "p", line: 2, username: "alice")) {
            try PasswordFile(parsing: duplicate, source: "p")
        }
    }

    @Test("constant-time comparison still compares")
    func constantTime() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equal([], [0]))
    }
}
