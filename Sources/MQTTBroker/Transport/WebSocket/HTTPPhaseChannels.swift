import NIOConcurrencyHelpers
import NIOCore

/// The connections of `protocol websockets` listeners that are still speaking HTTP (no upgrade yet, or serving
/// `http_dir` files). They have no MQTT connection, so the broker core does not know them; the broker closes them
/// through this list when it shuts down, as the core closes every MQTT connection. Channels live on several event
/// loops, hence the lock; it is taken once per connection and once per upgrade, never per message.
final class HTTPPhaseChannels: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var isClosed = false
    }

    private let state = NIOLockedValueBox(State())

    /// Tracks `channel` until it closes or upgrades; a channel that arrives after ``closeAll()`` is closed at once.
    func add(_ channel: any Channel) {
        let accepted = state.withLockedValue { state in
            if !state.isClosed { state.channels[ObjectIdentifier(channel)] = channel }
            return !state.isClosed
        }
        guard accepted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in remove(channel) }
    }

    /// The channel upgraded to MQTT (the core closes it from now on) or closed.
    func remove(_ channel: any Channel) {
        _ = state.withLockedValue { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Closes every tracked channel, and from now on every channel added.
    func closeAll() {
        let open = state.withLockedValue { state in
            state.isClosed = true
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }
}
