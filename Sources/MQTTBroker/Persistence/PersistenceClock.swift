#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// A point in wall-clock time, in milliseconds since 1970-01-01 UTC: how a message's expiry is stored, because the
/// broker's own deadlines (``NIODeadline``) count from the machine's boot and mean nothing after a restart.
struct WallClockTime: Sendable, Hashable, Comparable {
    var milliseconds: Int64

    static func < (lhs: WallClockTime, rhs: WallClockTime) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// The current wall-clock time (`CLOCK_REALTIME`).
    static func now() -> WallClockTime {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return WallClockTime(milliseconds: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }
}

/// The event loop's uptime clock and the wall clock read at the same instant, to convert a message's expiry between
/// the two: written as `wall + (expiresAt - uptime)`, read back as `uptime + (stored - wall)`. A message keeps the
/// time it had left, less the time the broker was down.
struct PersistenceClock: Sendable {
    var uptime: NIODeadline
    var wall: WallClockTime

    /// No expiry is further away than this (a Message Expiry Interval is at most `UInt32.max` seconds, about 136
    /// years); clamping keeps damaged or absurd stored times from overflowing the conversions.
    static let horizonMilliseconds: Int64 = 5_000_000_000_000

    /// Both clocks now; `uptime` is the core's idea of now (``BrokerCore/now``).
    static func now(uptime: NIODeadline) -> PersistenceClock {
        PersistenceClock(uptime: uptime, wall: .now())
    }

    /// The wall-clock time of an uptime deadline.
    func wallTime(of deadline: NIODeadline) -> WallClockTime {
        let remaining: Int64
        if deadline >= uptime {
            remaining = Int64(clamping: (deadline.uptimeNanoseconds - uptime.uptimeNanoseconds) / 1_000_000)
        } else {
            remaining = -Int64(clamping: (uptime.uptimeNanoseconds - deadline.uptimeNanoseconds) / 1_000_000)
        }
        let clamped = min(max(remaining, -Self.horizonMilliseconds), Self.horizonMilliseconds)
        return WallClockTime(milliseconds: wall.milliseconds.addingReportingOverflow(clamped).partialValue)
    }

    /// Whether a stored expiry has passed.
    func hasExpired(_ expiresAt: WallClockTime) -> Bool { expiresAt <= wall }

    /// The uptime deadline of a stored expiry; `uptime` itself (expired) when it has passed.
    func deadline(of expiresAt: WallClockTime) -> NIODeadline {
        let (difference, overflow) = expiresAt.milliseconds.subtractingReportingOverflow(wall.milliseconds)
        guard !overflow else { return expiresAt > wall ? uptime + .milliseconds(Self.horizonMilliseconds) : uptime }
        guard difference > 0 else { return uptime }
        return uptime + .milliseconds(min(difference, Self.horizonMilliseconds))
    }
}
