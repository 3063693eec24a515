import NIOCore

/// The parts of a session's state only some MQTT 5 sessions use: a Maximum Packet Size, an expiry timer while
/// offline, and a will waiting for its delay. Behind one optional pointer, a session without them costs 8 bytes
/// instead of about 50 (docs/benchmarks.md, idle memory).
final class SessionExtras {
    var maximumPacketSize: Int?
    var expiryTask: Scheduled<Void>?
    var delayedWill: DelayedWill?
}

extension BrokerSession {
    /// The extras, created on first use.
    private var ensuredExtras: SessionExtras {
        if let extras { return extras }
        let created = SessionExtras()
        extras = created
        return created
    }

    /// The largest packet the client accepts (MQTT 5 Maximum Packet Size); nil when it set none.
    var maximumPacketSize: Int? {
        get { extras?.maximumPacketSize }
        set {
            guard newValue != nil || extras != nil else { return }
            ensuredExtras.maximumPacketSize = newValue
        }
    }

    /// Ends an offline MQTT 5 session when its expiry interval has passed.
    var expiryTask: Scheduled<Void>? {
        get { extras?.expiryTask }
        set {
            guard newValue != nil || extras != nil else { return }
            ensuredExtras.expiryTask = newValue
        }
    }

    /// The will of the last connection, waiting for its Will Delay Interval unless the session resumes first.
    var delayedWill: DelayedWill? {
        get { extras?.delayedWill }
        set {
            guard newValue != nil || extras != nil else { return }
            ensuredExtras.delayedWill = newValue
        }
    }
}
