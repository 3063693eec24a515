import Synchronization

/// A value protected by a lock, shared between the caller tasks and the network thread.
///
/// A class around `Mutex` so that it can be stored in the `Sendable` engine and captured by callbacks. `Mutex`
/// rather than `NSLock`: it spins briefly before sleeping, and the critical sections here are a few dictionary
/// operations long, so a contended caller usually gets the lock without a futex round trip.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: sending Value) {
        mutex = Mutex(value)
    }

    func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
