import MQTTCore

/// The broker's sessions, by client identifier and by ``SessionKey``, and the rules for making them: every session
/// gets a key that is never reused, and a client that connects with an empty identifier gets a unique one.
///
/// Confined to the core's event loop (hence its `@exclusivity(unchecked)` properties, see ``BrokerCore``).
final class SessionRegistry {
    /// Keyed by the identifier's bytes: two identifiers that only Unicode calls equal are two clients.
    @exclusivity(unchecked) private var byClientID: [UTF8Key<String>: BrokerSession] = [:]
    @exclusivity(unchecked) private(set) var byKey: [SessionKey: BrokerSession] = [:]
    @exclusivity(unchecked) private var nextSessionKey: UInt64 = 0
    @exclusivity(unchecked) private var nextAssignedID: UInt64 = 0
    /// What every new session's outbound flow is bounded by.
    private let makeFlow: () -> OutboundFlow

    init(configuration: BrokerConfiguration) {
        self.makeFlow = {
            OutboundFlow(
                maxInflight: configuration.maxInflightMessages,
                maxQueued: configuration.maxQueuedMessages,
                maxQueuedBytes: configuration.maxQueuedBytes,
                queueQoS0WhileOffline: configuration.queueQoS0Messages
            )
        }
    }

    /// The number of sessions, connected or not.
    var count: Int { byKey.count }

    /// The session stored for `clientID`, if any.
    func session(forClientID clientID: String) -> BrokerSession? {
        byClientID[UTF8Key(clientID)]
    }

    /// The session with `key`, if it still exists.
    @inline(__always)
    func session(forKey key: SessionKey) -> BrokerSession? {
        byKey[key]
    }

    /// A new session for `clientID`, replacing any stored under that identifier in the by-identifier index.
    func makeSession(clientID: String, cleanSession: Bool) -> BrokerSession {
        nextSessionKey += 1
        let session = BrokerSession(
            key: SessionKey(rawValue: nextSessionKey), clientID: clientID, cleanSession: cleanSession, outbound: makeFlow())
        byClientID[UTF8Key(clientID)] = session
        byKey[session.key] = session
        return session
    }

    /// Forgets `session` (its subscriptions are the caller's to remove from the index).
    func remove(_ session: BrokerSession) {
        byKey[session.key] = nil
        if byClientID[UTF8Key(session.clientID)] === session {
            byClientID[UTF8Key(session.clientID)] = nil
        }
    }

    /// A unique identifier for a client that connected with an empty one (MQTT-3.1.3-6).
    func assignClientID() -> String {
        repeat {
            nextAssignedID += 1
            let random = UInt32.random(in: 0...UInt32.max)
            let candidate = "auto-\(String(random, radix: 16))-\(nextAssignedID)"
            if byClientID[UTF8Key(candidate)] == nil { return candidate }
        } while true
    }
}
