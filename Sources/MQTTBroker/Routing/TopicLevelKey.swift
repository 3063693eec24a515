#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One edge of the subscription trie: the bytes of one topic level, compared and hashed byte for byte
/// (MQTT-4.7.3-4, like ``UTF8Key``).
///
/// Keys stored in the trie own their bytes (a `String`, inline when short). A key used to look a level up while
/// matching borrows the topic's bytes instead, so walking a topic builds no substrings and allocates nothing.
/// A borrowing key is only valid inside the `withUTF8` scope of the topic it points into, and is never stored
/// (``SubscriptionIndex`` only inserts owning keys).
struct TopicLevelKey: Hashable {
    private enum Bytes {
        case owned(String)
        case borrowed(UnsafeRawBufferPointer)
    }

    private let bytes: Bytes

    /// A key that owns a copy of `level`, for storing in the trie.
    init(owning level: Substring) {
        var owned = String(level)
        owned.makeContiguousUTF8()
        self.bytes = .owned(owned)
    }

    /// A key that points into bytes the caller keeps alive and unchanged while the key is in use.
    init(borrowing level: UnsafeRawBufferPointer) {
        self.bytes = .borrowed(level)
    }

    private func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        switch bytes {
        case .owned(let string):
            // Contiguous for every native string, inline (small) ones included; the copy is a fallback.
            return string.utf8.withContiguousStorageIfAvailable { body(UnsafeRawBufferPointer($0)) }
                ?? Array(string.utf8).withUnsafeBytes(body)
        case .borrowed(let pointer):
            return body(pointer)
        }
    }

    static func == (lhs: TopicLevelKey, rhs: TopicLevelKey) -> Bool {
        lhs.withBytes { left in
            rhs.withBytes { right in
                guard left.count == right.count else { return false }
                guard let leftStart = left.baseAddress, let rightStart = right.baseAddress else { return true }  // both empty
                return memcmp(leftStart, rightStart, left.count) == 0
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }
}
