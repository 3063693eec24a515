import NIOCore

/// Bounded waits on NIO futures from async code.
enum FutureWaiting {
    /// Waits until every future has succeeded (true) or `timeout` passes (false); the first failure is thrown.
    static func allSucceed(
        _ futures: [EventLoopFuture<Void>], timeout: TimeAmount, on loop: any EventLoop
    ) async throws(LoadGenError) -> Bool {
        let promise = loop.makePromise(of: Bool.self)
        EventLoopFuture.andAllSucceed(futures, on: loop).whenComplete { result in
            switch result {
            case .success: promise.succeed(true)
            case .failure(let error): promise.fail(error)
            }
        }
        let timer = loop.scheduleTask(in: timeout) { promise.succeed(false) }
        defer { timer.cancel() }
        return try await value(of: promise.futureResult)
    }

    /// Awaits `future`, turning any error into a ``LoadGenError``.
    static func value<T: Sendable>(of future: EventLoopFuture<T>) async throws(LoadGenError) -> T {
        do {
            return try await future.get()
        } catch let error as LoadGenError {
            throw error
        } catch {
            throw .connectionFailed("\(error)")
        }
    }
}
