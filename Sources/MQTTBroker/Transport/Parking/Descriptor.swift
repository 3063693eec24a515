#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// File-descriptor calls under names that do not clash with the connection's own `close(_:)`.
enum Descriptor {
    /// `dup(2)`: a second descriptor for the same socket, or nil.
    static func duplicate(_ descriptor: CInt) -> CInt? {
        let copy = dup(descriptor)
        return copy >= 0 ? copy : nil
    }

    /// `close(2)`.
    static func close(_ descriptor: CInt) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #elseif canImport(Musl)
        _ = Musl.close(descriptor)
        #endif
    }
}
