#if canImport(Glibc)
import Glibc
#endif
import CLinuxSockets

/// What a descriptor registered with an ``EpollEventLoop`` is watched for. With ``readable``, the peer closing its
/// side is reported too, as readable; without it, only a hang-up or an error is (the kernel always reports those),
/// so a descriptor whose reading is paused does not wake the loop for a half-close it will not read.
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
        var events: UInt32 = 0
        if contains(.readable) { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
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
