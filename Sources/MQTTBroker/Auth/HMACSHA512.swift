/// HMAC-SHA512 (RFC 2104) with the key's inner and outer states computed once, so PBKDF2's thousands of MACs
/// under one key each cost two compressions of the message, not four.
struct HMACSHA512 {
    private let inner: SHA512
    private let outer: SHA512

    init(key: [UInt8]) {
        var block = key.count > SHA512.blockSize ? SHA512.hash(key) : key
        block.append(contentsOf: [UInt8](repeating: 0, count: SHA512.blockSize - block.count))
        var inner = SHA512()
        inner.update(block.map { $0 ^ 0x36 })
        var outer = SHA512()
        outer.update(block.map { $0 ^ 0x5c })
        self.inner = inner
        self.outer = outer
    }

    /// The MAC of `message`.
    func authenticationCode(for message: [UInt8]) -> [UInt8] {
        var innerHash = inner
        innerHash.update(message)
        var outerHash = outer
        outerHash.update(innerHash.finalize())
        return outerHash.finalize()
    }
}

/// PBKDF2 (RFC 8018 section 5.2) with HMAC-SHA512, as mosquitto 2.0 uses for `$7$` password hashes.
enum PBKDF2SHA512 {
    /// Derives `length` bytes from `password` and `salt` with `iterations` rounds (at least 1).
    static func derive(password: [UInt8], salt: [UInt8], iterations: Int, length: Int) -> [UInt8] {
        let mac = HMACSHA512(key: password)
        var derived: [UInt8] = []
        derived.reserveCapacity(length + SHA512.digestSize)
        var blockIndex: UInt32 = 1
        while derived.count < length {
            var u = mac.authenticationCode(
                for: salt + [
                    UInt8(truncatingIfNeeded: blockIndex >> 24), UInt8(truncatingIfNeeded: blockIndex >> 16),
                    UInt8(truncatingIfNeeded: blockIndex >> 8), UInt8(truncatingIfNeeded: blockIndex),
                ])
            var block = u
            if iterations > 1 {
                for _ in 1..<iterations {
                    u = mac.authenticationCode(for: u)
                    for index in block.indices {
                        block[index] ^= u[index]
                    }
                }
            }
            derived.append(contentsOf: block)
            blockIndex &+= 1
        }
        return Array(derived.prefix(length))
    }
}

/// Byte comparison whose time depends only on the lengths, never on where the contents differ.
enum ConstantTime {
    /// Whether `lhs` and `rhs` are equal.
    static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: lhs.count ^ rhs.count)
        for index in 0..<min(lhs.count, rhs.count) {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0 && lhs.count == rhs.count
    }
}
