#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether two byte ranges hold the same bytes, compared by `memcmp`.
///
/// `Sequence.elementsEqual` on buffer pointers compares through an iterator one byte at a time, and the broker
/// compares topic bytes for nearly every message (a publisher's repeated topic, the subscription index's level
/// keys). `memcmp` compares a word or a vector at a time.
@usableFromInline
func sameBytes(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
    guard lhs.count == rhs.count else { return false }
    guard let left = lhs.baseAddress, let right = rhs.baseAddress else { return true }  // Both empty.
    return memcmp(left, right, lhs.count) == 0
}
