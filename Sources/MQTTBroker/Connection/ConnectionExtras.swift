import MQTTCore

/// The parts of a connection's state that most connections never use: a will, MQTT 5 topic aliases in either
/// direction, and a CONNECT waiting for enhanced authentication. Behind one optional pointer, an idle connection
/// without any of them costs 8 bytes for all four instead of about 90 (docs/benchmarks.md, idle memory).
final class ConnectionExtras {
    var will: ConnectPacket.Will?
    var topicAliases = TopicAliases()
    var outboundTopicAliases = OutboundTopicAliases()
    var pendingAuthentication: PendingAuthentication?
}

extension BrokerConnectionHandler {
    /// The extras, created on first use.
    private var ensuredExtras: ConnectionExtras {
        if let extras { return extras }
        let created = ConnectionExtras()
        extras = created
        return created
    }

    /// The will registered by CONNECT; published by the core when the connection ends without DISCONNECT.
    var will: ConnectPacket.Will? {
        get { extras?.will }
        set {
            guard newValue != nil || extras != nil else { return }
            ensuredExtras.will = newValue
        }
    }

    /// The topic aliases an MQTT 5 client set on this connection (MQTT 5.0 3.3.2.3.4).
    var topicAliases: TopicAliases {
        get { extras?.topicAliases ?? TopicAliases() }
        // In place, so resolving an alias does not copy the table.
        _modify { yield &ensuredExtras.topicAliases }
    }

    /// A CONNECT in the middle of enhanced authentication (``AuthHandler``).
    var pendingAuthentication: PendingAuthentication? {
        get { extras?.pendingAuthentication }
        set {
            guard newValue != nil || extras != nil else { return }
            ensuredExtras.pendingAuthentication = newValue
        }
    }

    /// How many topic aliases the client allows the broker (0: none). Read per PUBLISH, so it copies no table.
    var outboundTopicAliasMaximum: UInt16 { extras?.outboundTopicAliases.maximum ?? 0 }

    /// The topic aliases the broker sets towards an MQTT 5 client that allows them (maximum 0 when it allows none).
    var outboundTopicAliases: OutboundTopicAliases {
        get { extras?.outboundTopicAliases ?? OutboundTopicAliases() }
        _modify { yield &ensuredExtras.outboundTopicAliases }
    }
}
