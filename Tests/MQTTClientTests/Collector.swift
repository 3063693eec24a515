import Foundation
import LiveTestSupport

/// Collects everything an `AsyncStream` yields so tests can wait (bounded) for what they expect.
final class Collector<Element: Sendable>: @unchecked Sendable {
    // @unchecked: `items` is only touched while `lock` is held.
    private let lock = NSLock()
    private var items: [Element] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<Element>) {
        let task = Task { [weak self] in
            for await item in stream {
                guard let self else { return }
                self.append(item)
            }
        }
        lock.lock()
        self.task = task
        lock.unlock()
    }

    private func append(_ item: Element) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    deinit {
        task?.cancel()
    }

    var snapshot: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }

    /// Waits until `predicate` holds for the collected items; throws after `timeout`.
    @discardableResult
    func wait(
        timeout: Duration = .seconds(10), _ what: String = "items",
        until predicate: ([Element]) -> Bool
    ) async throws -> [Element] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let items = snapshot
            if predicate(items) { return items }
            guard ContinuousClock.now < deadline else {
                throw HarnessError("timed out waiting for \(what); got \(items.count): \(items.suffix(10))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until at least `count` items arrived.
    @discardableResult
    func wait(count: Int, timeout: Duration = .seconds(10)) async throws -> [Element] {
        try await wait(timeout: timeout, "\(count) items") { $0.count >= count }
    }
}
