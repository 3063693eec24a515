/// What the broker does with each mosquitto 2.0 option (the list of `man mosquitto.conf`, mosquitto 2.0.11).
///
/// Every mosquitto option is in exactly one class, so a mosquitto user never sees "unknown option" for a real one:
/// - **implemented**: parsed and applied by ``BrokerConfigParser`` (the TLS and persistence helpers included);
/// - **ignored**: accepted with a one-line warning, because ignoring it changes nothing clients or an operator
///   rely on (the reason is in the table below and in the warning);
/// - **unsupported**: refused with "mosquitto option not supported by mqttchat: NAME (FILE:LINE)", because running
///   without it could weaken security, lose data or change what clients see.
///
/// | option | class | why |
/// | --- | --- | --- |
/// | `pid_file` | ignored | mosquitto 2 writes it only when daemonised (`-d`); mqttchat never daemonises |
/// | `user` | ignored | mqttchat never switches user; start it as the account it should run as (systemd `User=`) |
/// | `log_timestamp`, `log_timestamp_format` | ignored | cosmetic: swift-log stamps every line itself |
/// | `log_facility` | ignored | only for `log_dest syslog`, which is refused |
/// | `connection_messages` | ignored | cosmetic: connects and disconnects are logged at debug level |
/// | `websockets_log_level`, `websockets_headers_size` | ignored | libwebsockets tuning; the WebSocket listener is SwiftNIO's |
/// | `auth_plugin_deny_special_chars` | ignored | only for `auth_plugin`, which is refused |
/// | `set_tcp_nodelay` | ignored | latency tuning only; what is delivered does not change |
/// | `autosave_on_changes false` | implemented | the default: snapshots every `autosave_interval` seconds; `true` is refused (snapshots would come less often than asked) |
/// | `protocol mqtt\|websockets`, `http_dir` | implemented | per listener (`ListenerProtocolDraft`) |
/// | `include_dir` | implemented | `*.conf` in mosquitto's order, from the main file only |
/// | bridges, plugins, PSK, other TLS and listener options, limits below | unsupported | see ``unsupported`` |
enum MosquittoOptionCatalog {
    /// How the broker treats an option it does not implement.
    enum Treatment: Equatable, Sendable {
        /// Accepted with a warning that gives this reason.
        case ignored(reason: String)
        /// Refused as not supported by mqttchat.
        case unsupported
        /// Not a mosquitto option at all.
        case unknown
    }

    /// mosquitto options the parser implements (possibly only some values, see the type's table).
    static let implemented: Set<String> = Set([
        "acl_file", "allow_anonymous", "autosave_interval", "autosave_on_changes", "cafile", "certfile",
        "include_dir", "keyfile", "listener", "log_dest", "log_type", "max_connections", "max_inflight_messages",
        "max_keepalive", "max_packet_size", "max_qos", "max_topic_alias", "message_size_limit",
        "persistent_client_expiration",
        "allow_zero_length_clientid", "max_queued_bytes", "max_queued_messages", "password_file",
        "http_dir", "persistence", "persistence_location", "protocol", "queue_qos0_messages", "require_certificate",
        "retain_available", "sys_interval", "tls_version", "use_identity_as_username",
    ]).union(BridgeConfigLines.options)

    private static let libwebsocketsOnly = "it tunes libwebsockets, and mqttchat's WebSocket listener is SwiftNIO's"

    /// Options accepted with a warning, and why ignoring them is harmless.
    static let ignored: [String: String] = [
        "pid_file": "mosquitto writes it only when run as a daemon (-d) and mqttchat never daemonises",
        "user": "mqttchat never switches user; start it as the account it should run as",
        "log_timestamp": "log lines always carry swift-log's timestamp",
        "log_timestamp_format": "log lines always carry swift-log's timestamp",
        "log_facility": "it only applies to log_dest syslog, which is refused",
        "connection_messages": "connections are logged at debug level (log_type debug)",
        "websockets_log_level": libwebsocketsOnly,
        "websockets_headers_size": libwebsocketsOnly,
        "auth_plugin_deny_special_chars": "it only applies to auth_plugin, which is refused",
        "set_tcp_nodelay": "it only tunes latency; what is delivered does not change",
    ]

    /// mosquitto options refused because running without them could weaken security, lose data or change what
    /// clients see.
    static let unsupported: Set<String> = [
        // Limits and behaviour clients would notice.
        "allow_duplicate_messages", "auto_id_prefix", "check_retain_source",
        "clientid_prefixes", "max_inflight_bytes", "memory_limit",
        "persistence_file", "upgrade_outgoing_qos", "per_listener_settings", "port",
        // Listeners, TLS and authentication not implemented.
        "bind_address", "bind_interface", "mount_point", "socket_domain", "use_username_as_clientid", "capath",
        "ciphers", "ciphers_tls1.3", "crlfile", "dhparamfile", "psk_file", "psk_hint", "tls_engine",
        "tls_engine_kpass_sha1", "tls_keyform", "use_subject_as_username", "auth_plugin", "plugin",
        // Bridge options not implemented (the others are ``BridgeConfigLines/options``).
        "bridge_alpn", "bridge_attempt_unsubscribe", "bridge_bind_address", "bridge_capath", "bridge_identity",
        "bridge_max_packet_size", "bridge_outgoing_retain", "bridge_psk", "bridge_require_ocsp", "bridge_tls_version",
        "idle_timeout", "local_cleansession", "local_password", "threshold",
    ]

    /// Option name prefixes of plugin settings (`auth_opt_NAME`, `plugin_opt_NAME`); refused with their plugin.
    static let unsupportedPrefixes = ["auth_opt_", "plugin_opt_"]

    /// How `option` is treated when the parser does not implement it.
    static func treatment(of option: String) -> Treatment {
        if let reason = ignored[option] { return .ignored(reason: reason) }
        if unsupported.contains(option) || unsupportedPrefixes.contains(where: { option.hasPrefix($0) }) {
            return .unsupported
        }
        return .unknown
    }
}
