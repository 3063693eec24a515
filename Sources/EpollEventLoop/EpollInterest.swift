#if canImport(Glibc)
import Glibc
#endif
import CLinuxSockets

/// What a descriptor registered with an ``EpollEventLoop`` is watched for. The peer closing (or an error) is always
/// reported, as readable.
public struct EpollInterest: OptionSet, Sendable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// Bytes to read, or the peer closed.
    public static let readable = EpollInterest(rawValue: 1)
    /// Room to write.
    public static let writable = EpollInterest(rawValue: 2)

    /// The `epoll_event` flags.
    var events: UInt32 {
        var events = EPOLLRDHUP.rawValue
        if contains(.readable) { events |= EPOLLIN.rawValue }
        if contains(.writable) { events |= EPOLLOUT.rawValue }
        return events
    }
}

/// Receives a registered descriptor's readiness, on the loop. Level-triggered: called again on every iteration while
/// the condition holds, so a handler that cannot act should change its interest. A call may also find nothing ready
/// (a descriptor number closed and reused within one iteration), so `EAGAIN` is an answer to expect.
public protocol EpollEventHandler: AnyObject {
    /// `descriptor` has bytes to read, or the peer closed it, or it has an error: a `read` will tell.
    func descriptorReadable(_ descriptor: CInt)
    /// `descriptor` can take more bytes.
    func descriptorWritable(_ descriptor: CInt)
}
