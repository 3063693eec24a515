/// Checks `condition` every `interval` until it holds or `limit` has passed, then looks once more.
///
/// The last look is what makes a bounded wait honest on a loaded machine: a test process starved past its deadline
/// wakes up with the deadline gone, and what it waited for has often happened in the meantime. Without that look
/// the wait reports a timeout for work that finished in time (seen once as a client's refused connect "timing
/// out" while a clean-clone build shared the machine).
public func poll(
    every interval: Duration, for limit: Duration, until condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    // Work that became ready in the same wake-up (a resumed continuation) gets its turn before the last look.
    await Task.yield()
    return try await condition()
}
