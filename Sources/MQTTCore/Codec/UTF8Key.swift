/// A string that compares, hashes and sorts by its UTF-8 bytes.
///
/// Swift's `String` equality is Unicode canonical equivalence: `"caf\u{E9}" == "cafe\u{301}"`. MQTT forbids that
/// for topics — the server must not normalise topic names or filters when it matches them (MQTT-4.7.3-4), so
/// those are two different topics — and mosquitto compares client identifiers and topics byte for byte too. The
/// broker keys its dictionaries of topics, topic levels, topic filters and client identifiers with this.
public struct UTF8Key<Base: StringProtocol & Sendable>: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The string itself.
    public let base: Base

    /// Wraps `base`.
    @inlinable
    public init(_ base: Base) {
        self.base = base
    }

    @inlinable
    public static func == (lhs: Self, rhs: Self) -> Bool {
        let fast = lhs.base.utf8.withContiguousStorageIfAvailable { left in
            rhs.base.utf8.withContiguousStorageIfAvailable { right in
                sameBytes(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right))
            }
        }
        if let fast = fast ?? nil { return fast }
        return lhs.base.utf8.elementsEqual(rhs.base.utf8)
    }

    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.base.utf8.lexicographicallyPrecedes(rhs.base.utf8)
    }

    /// Hashes the bytes with one `combine(bytes:)` on every path: equal keys must hash alike whether or not
    /// their storage is contiguous, and feeding the same bytes one by one is not documented to give the same hash.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        let hashed: Void? = base.utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        if hashed == nil {
            Array(base.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    public var description: String { String(base) }
}

extension UTF8Key: ExpressibleByStringLiteral, ExpressibleByUnicodeScalarLiteral,
    ExpressibleByExtendedGraphemeClusterLiteral where Base == String
{
    /// A key written as a literal (tests, fixed client identifiers).
    public init(stringLiteral value: String) {
        self.init(value)
    }
}
