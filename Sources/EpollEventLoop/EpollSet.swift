#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import CLinuxSockets

/// An epoll set with an eventfd in it that other threads signal to end a wait: what ``EpollEventLoop`` and the
/// broker's socket watcher both block on. The owner closes it (``close()``) once no thread signals it any more.
public struct EpollSet: Sendable {
    /// The epoll descriptor.
    public let descriptor: CInt
    private let wakeup: CInt

    /// The `data` of the wake-up's events; owners tag their descriptors with other values.
    public static let wakeupTag = UInt64.max

    /// Creates the set and its wake-up eventfd.
    public init() throws(SystemCallError) {
        let epoll = epoll_create1(CInt(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw .systemCall("epoll_create1", errno) }
        let wakeup = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeup >= 0 else {
            let error = errno
            _ = Glibc.close(epoll)
            throw .systemCall("eventfd", error)
        }
        self.descriptor = epoll
        self.wakeup = wakeup
        do {
            try control(EPOLL_CTL_ADD, wakeup, events: EPOLLIN.rawValue, data: Self.wakeupTag, "epoll_ctl(eventfd)")
        } catch {
            close()
            throw error
        }
    }

    /// `epoll_ctl(operation)` for `descriptor`, reported as `data`; `call` names it in the error.
    public func control(
        _ operation: CInt, _ descriptor: CInt, events: UInt32, data: UInt64, _ call: StaticString
    ) throws(SystemCallError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        guard epoll_ctl(self.descriptor, operation, descriptor, &event) == 0 else {
            throw .systemCall("\(call)", errno)
        }
    }

    /// Removes `descriptor`; harmless when it is not in the set.
    public func remove(_ descriptor: CInt) {
        var event = epoll_event()
        _ = epoll_ctl(self.descriptor, EPOLL_CTL_DEL, descriptor, &event)
    }

    /// Waits up to `timeout` milliseconds (-1: for ever) and fills `events`; the count, or -1 with `errno` set.
    public func wait(into events: inout [epoll_event], timeout: CInt) -> Int {
        Int(events.withUnsafeMutableBufferPointer { epoll_wait(descriptor, $0.baseAddress, CInt($0.count), timeout) })
    }

    /// Ends a wait in progress, or the next one.
    public func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeup, $0.baseAddress, 8) }
    }

    /// Consumes the signals, after an event tagged ``wakeupTag``.
    public func drainWakeup() {
        var drained: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &drained) { read(wakeup, $0.baseAddress, 8) }
    }

    /// Closes the eventfd and the epoll descriptor.
    public func close() {
        _ = Glibc.close(wakeup)
        _ = Glibc.close(descriptor)
    }
}

/// A system call that failed, as the broker's own socket handling reports it.
public enum SystemCallError: Error, CustomStringConvertible {
    /// The call (named, with what it was for) failed with `errno`.
    case systemCall(String, CInt)

    public var description: String {
        switch self {
        case .systemCall(let call, let error): "\(call) failed: \(String(cString: strerror(error))) (errno \(error))"
        }
    }
}
