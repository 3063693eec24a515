import Foundation

/// Runs `operation` for at most `seconds`; returns `nil` if it is still running then.
///
/// For operations that cannot be cancelled (the MQTT client's `connect()` waits for libmosquitto):
/// on timeout the operation keeps running in the background and the caller moves on, which in a
/// command line tool means reporting the failure and exiting.
func withDeadline<T: Sendable>(seconds: Double, _ operation: @escaping @Sendable () async -> T) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        let once = ResumeOnce(continuation)
        let work = Task { once.resume(await operation()) }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            if once.resume(nil) { work.cancel() }
        }
    }
}

/// Resumes a continuation from whichever of several tasks finishes first.
private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    // @unchecked: `continuation` is only touched while holding `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    init(_ continuation: CheckedContinuation<T, Never>) {
        self.continuation = continuation
    }

    /// Resumes with `value` if nobody did yet; returns whether this call did.
    @discardableResult
    func resume(_ value: T) -> Bool {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume(returning: value)
        return pending != nil
    }
}
