#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLinuxSockets
import EpollEventLoop
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// One thread of the broker's own, blocked in `epoll_wait`, that watches two kinds of sockets:
/// - the plain-TCP listening sockets: it accepts their connections and hands each new socket to `onAccepted` of its
///   listener (which gives it to the broker's own epoll loop, or to SwiftNIO);
/// - the sockets of parked connections (``BrokerConnectionHandler`` + Parking): idle connections whose NIO channel
///   was released.
///   When one becomes readable (the client sent something, or closed), its ticket goes to `onParkedReady` with the
///   others of the same wake-up, in one call.
///
/// The thread only moves file descriptors around: it reads no MQTT byte. Registrations are one-shot, so a ready
/// parked socket is reported once until it is parked again.
final class SocketWatcher: Sendable {
    /// A parked socket's ticket: its descriptor in the low 32 bits and a generation in the next 31 (the top bit is
    /// clear), so a report that crosses a re-park of a reused descriptor number can be recognised as stale.
    typealias Ticket = UInt64

    private struct Listener {
        let descriptor: CInt
        let onAccepted: @Sendable (CInt) -> Void
        /// Accepting stopped (file descriptors ran out) until this time.
        var pausedUntil: NIODeadline?
    }

    private struct State {
        var listeners: [Int: Listener] = [:]
        var nextListenerID = 0
        var isStopping = false
        var listenersToClose: [EventLoopPromise<Void>?] = []
    }

    private let epoll: EpollSet
    private let onParkedReady: @Sendable ([Ticket]) -> Void
    private let onAcceptError: @Sendable (String) -> Void
    private let state = NIOLockedValueBox(State())
    private let stopped = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)

    private static let listenerTag: UInt64 = 1 << 63
    /// How long accepting pauses after the process ran out of file descriptors (NIO's accept back-off does the same).
    static let acceptPause: TimeAmount = .seconds(1)

    /// Creates the epoll set and starts the thread.
    init(
        onParkedReady: @escaping @Sendable ([Ticket]) -> Void,
        onAcceptError: @escaping @Sendable (String) -> Void
    ) throws(SystemCallError) {
        self.epoll = try EpollSet()
        self.onParkedReady = onParkedReady
        self.onAcceptError = onAcceptError
        let thread = Thread { [self] in run() }
        thread.name = "mqttchat-sockets"
        thread.start()
    }

    /// Composes a ticket.
    static func ticket(descriptor: CInt, generation: UInt32) -> Ticket {
        (UInt64(generation & 0x7FFF_FFFF) << 32) | UInt64(UInt32(bitPattern: descriptor))
    }

    /// The descriptor of a ticket.
    static func descriptor(of ticket: Ticket) -> CInt {
        CInt(bitPattern: UInt32(truncatingIfNeeded: ticket))
    }

    // MARK: Parked sockets

    /// Reports `ticket` once `descriptor` is readable or closed by the peer.
    func watch(_ descriptor: CInt, ticket: Ticket) throws(SystemCallError) {
        let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue
        try epoll.control(EPOLL_CTL_ADD, descriptor, events: events, data: ticket, "epoll_ctl(park)")
    }

    /// Stops watching `descriptor` (before it is closed or handed back to NIO). Harmless when it is not watched.
    func unwatch(_ descriptor: CInt) {
        epoll.remove(descriptor)
    }

    // MARK: Listeners

    /// Accepts connections on `descriptor` (a listening, non-blocking socket the watcher now owns).
    func addListener(_ descriptor: CInt, onAccepted: @escaping @Sendable (CInt) -> Void) throws(SystemCallError) {
        let id = state.withLockedValue { state in
            let id = state.nextListenerID
            state.nextListenerID += 1
            state.listeners[id] = Listener(descriptor: descriptor, onAccepted: onAccepted)
            return id
        }
        do {
            try epoll.control(
                EPOLL_CTL_ADD, descriptor, events: EPOLLIN.rawValue, data: Self.listenerTag | UInt64(id), "epoll_ctl(listen)")
        } catch {
            _ = state.withLockedValue { $0.listeners.removeValue(forKey: id) }
            throw error
        }
    }

    /// Stops accepting and closes every listening socket, on the watcher's thread (so no accept runs on a closed
    /// descriptor); `promise` succeeds once they are closed.
    func closeListeners(promise: EventLoopPromise<Void>?) {
        state.withLockedValue { $0.listenersToClose.append(promise) }
        signal()
    }

    /// Ends the thread and closes the epoll set and every listener; `promise` succeeds once the thread is gone.
    /// Parked sockets are not closed: their connections own them.
    func stop(promise: EventLoopPromise<Void>) {
        stopped.withLockedValue { $0 = promise }
        state.withLockedValue { $0.isStopping = true }
        signal()
    }

    // MARK: The thread

    private func signal() {
        epoll.signal()
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var ready: [Ticket] = []
        var acceptOn: [Int] = []
        while true {
            let timeout = acceptResumeTimeoutMilliseconds()
            let count = epoll.wait(into: &events, timeout: timeout)
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            ready.removeAll(keepingCapacity: true)
            acceptOn.removeAll(keepingCapacity: true)
            for event in events.prefix(count) {
                let data = event.data.u64
                if data == EpollSet.wakeupTag {
                    epoll.drainWakeup()
                } else if data & Self.listenerTag != 0 {
                    acceptOn.append(Int(data & ~Self.listenerTag))
                } else {
                    ready.append(data)
                }
            }
            if !ready.isEmpty {
                onParkedReady(ready)
            }
            for id in acceptOn {
                acceptAll(listenerID: id)
            }
            resumePausedListeners()
            if handleCommands() { break }
        }
        epoll.close()
        stopped.withLockedValue { $0 }?.succeed(())
    }

    /// Accepts until the backlog is empty.
    private func acceptAll(listenerID: Int) {
        guard let listener = state.withLockedValue({ $0.listeners[listenerID] }), listener.pausedUntil == nil else { return }
        while true {
            let socket = accept4(listener.descriptor, nil, nil, CInt(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            if socket >= 0 {
                listener.onAccepted(socket)
                continue
            }
            let error = errno
            switch error {
            case EINTR, ECONNABORTED:
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                onAcceptError("accept failed (\(String(cString: strerror(error)))); accepting again in 1 s")
                pause(listenerID: listenerID)
                return
            default:
                // EAGAIN: the backlog is empty. Anything else (a closed listener) also ends this round.
                return
            }
        }
    }

    /// Out of descriptors: stop watching the listener (level-triggered, it would wake us at once) for a while.
    private func pause(listenerID: Int) {
        let descriptor: CInt? = state.withLockedValue { state in
            state.listeners[listenerID]?.pausedUntil = .now() + Self.acceptPause
            return state.listeners[listenerID]?.descriptor
        }
        if let descriptor {
            _ = try? epoll.control(
                EPOLL_CTL_MOD, descriptor, events: 0, data: Self.listenerTag | UInt64(listenerID), "epoll_ctl(pause)")
        }
    }

    private func resumePausedListeners() {
        let now = NIODeadline.now()
        let resumed: [(Int, CInt)] = state.withLockedValue { state in
            var resumed: [(Int, CInt)] = []
            for (id, listener) in state.listeners {
                if let until = listener.pausedUntil, until <= now {
                    state.listeners[id]?.pausedUntil = nil
                    resumed.append((id, listener.descriptor))
                }
            }
            return resumed
        }
        for (id, descriptor) in resumed {
            _ = try? epoll.control(
                EPOLL_CTL_MOD, descriptor, events: EPOLLIN.rawValue, data: Self.listenerTag | UInt64(id), "epoll_ctl(resume)")
        }
    }

    /// The `epoll_wait` timeout: until the first paused listener may accept again, or forever.
    private func acceptResumeTimeoutMilliseconds() -> CInt {
        let earliest = state.withLockedValue { $0.listeners.values.compactMap(\.pausedUntil).min() }
        guard let earliest else { return -1 }
        let nanoseconds = max(0, (earliest - .now()).nanoseconds)
        return CInt(min(Int64(60_000), nanoseconds / 1_000_000 + 1))
    }

    /// Closes listeners on request; returns whether the thread should end.
    private func handleCommands() -> Bool {
        let (closeRequests, stopping) = state.withLockedValue { state in
            let requests = state.listenersToClose
            state.listenersToClose = []
            return (requests, state.isStopping)
        }
        if !closeRequests.isEmpty || stopping {
            let listeners = state.withLockedValue { state in
                let listeners = Array(state.listeners.values)
                state.listeners = [:]
                return listeners
            }
            for listener in listeners {
                unwatch(listener.descriptor)
                close(listener.descriptor)
            }
            for promise in closeRequests { promise?.succeed(()) }
        }
        return stopping
    }
}
