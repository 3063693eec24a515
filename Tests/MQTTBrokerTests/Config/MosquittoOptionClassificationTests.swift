import Foundation
import Testing

@testable import MQTTBroker

/// Every mosquitto 2.0 option is implemented, ignored with a warning, or refused as not supported — never
/// "unknown option" (the list is `man mosquitto.conf` of mosquitto 2.0.11).
@Suite("mosquitto option classification")
struct MosquittoOptionClassificationTests {
    /// Every option `man mosquitto.conf` (mosquitto 2.0.11) documents, plus the 2.0 plugin spellings.
    static let mosquittoOptions: [String] = [
        "acl_file", "address", "addresses", "allow_anonymous", "allow_duplicate_messages",
        "allow_zero_length_clientid", "auth_opt_db_host", "auth_plugin", "auth_plugin_deny_special_chars",
        "auto_id_prefix", "autosave_interval", "autosave_on_changes", "bind_address", "bind_interface",
        "bridge_alpn", "bridge_attempt_unsubscribe", "bridge_bind_address", "bridge_cafile", "bridge_capath",
        "bridge_certfile", "bridge_identity", "bridge_insecure", "bridge_keyfile", "bridge_max_packet_size",
        "bridge_outgoing_retain", "bridge_protocol_version", "bridge_psk", "bridge_require_ocsp", "bridge_tls_version",
        "cafile", "capath", "certfile", "check_retain_source", "ciphers", "ciphers_tls1.3", "cleansession",
        "clientid_prefixes", "connection", "connection_messages", "crlfile", "dhparamfile", "http_dir",
        "idle_timeout", "include_dir", "keepalive_interval", "keyfile", "listener", "local_cleansession",
        "local_clientid", "local_password", "local_username", "log_dest", "log_facility", "log_timestamp",
        "log_timestamp_format", "log_type", "max_connections", "max_inflight_bytes", "max_inflight_messages",
        "max_keepalive", "max_packet_size", "max_qos", "max_queued_bytes", "max_queued_messages", "max_topic_alias",
        "memory_limit", "message_size_limit", "mount_point", "notification_topic", "notifications",
        "notifications_local_only", "password_file", "per_listener_settings", "persistence", "persistence_file",
        "persistence_location", "persistent_client_expiration", "pid_file", "plugin", "plugin_opt_x", "port",
        "protocol", "psk_file", "psk_hint", "queue_qos0_messages", "remote_clientid", "remote_password",
        "remote_username", "require_certificate", "restart_timeout", "retain_available", "round_robin",
        "set_tcp_nodelay", "socket_domain", "start_type", "sys_interval", "threshold", "tls_engine",
        "tls_engine_kpass_sha1", "tls_keyform", "tls_version", "topic", "try_private", "upgrade_outgoing_qos",
        "use_identity_as_username", "use_subject_as_username", "use_username_as_clientid", "user",
        "websockets_headers_size", "websockets_log_level",
    ]

    @Test("every mosquitto option is in exactly one class")
    func everyOptionClassified() {
        for option in Self.mosquittoOptions {
            let implemented = MosquittoOptionCatalog.implemented.contains(option)
            let treatment = MosquittoOptionCatalog.treatment(of: option)
            let classes = (implemented ? 1 : 0) + (treatment == .unknown ? 0 : 1)
            #expect(classes == 1, "\(option): implemented \(implemented), treatment \(treatment)")
        }
    }

    @Test("no mosquitto option is reported as unknown by the parser", arguments: mosquittoOptions)
    func neverUnknown(option: String) {
        // A plausible value; whatever the outcome, it must not be "unknown option".
        let text = option == "listener" ? "listener 1883" : "listener 1883\n\(option) 1"
        do {
            _ = try BrokerConfigParser.parse(text, source: "t")
        } catch {
            if case .unknownOption = error { Issue.record("\(option) reported as unknown") }
        }
    }

    @Test("ignored options are accepted with one warning line that names file, line, option and why")
    func ignoredWarns() throws {
        let settings = try BrokerConfigParser.parse(
            "pid_file /run/mosquitto/mosquitto.pid\nlog_timestamp true\nuser mosquitto\nconnection_messages true",
            source: "m.conf")
        #expect(settings.warnings.count == 4)
        #expect(settings.warnings.first?.hasPrefix("m.conf:1: ignoring mosquitto option 'pid_file': ") == true)
        #expect(settings.warnings.allSatisfy { !$0.contains("\n") })
    }

    @Test("unsupported options and values are refused with mosquitto's name, file and line")
    func unsupportedRefused() {
        let cases: [(String, String)] = [
            ("\nclientid_prefixes sensor-", "clientid_prefixes"),
            ("\nidle_timeout 60", "idle_timeout"),
            ("\nauth_opt_db_host x", "auth_opt_db_host"),
            ("\nlog_dest syslog", "log_dest syslog"),
            ("\nautosave_on_changes true", "autosave_on_changes true"),
        ]
        for (text, option) in cases {
            #expect(throws: BrokerConfigError.unsupportedOption(source: "t", line: 2, option: option), "\(text)") {
                try BrokerConfigParser.parse(text, source: "t")
            }
        }
        let message = BrokerConfigError.unsupportedOption(source: "m.conf", line: 7, option: "psk_file").description
        #expect(message == "mosquitto option not supported by mqttchat: psk_file (m.conf:7)")
    }

    @Test("words mosquitto does not know stay unknown options")
    func unknownStaysUnknown() {
        #expect(throws: BrokerConfigError.unknownOption(source: "t", line: 1, option: "listner")) {
            try BrokerConfigParser.parse("listner 1883", source: "t")
        }
        #expect(MosquittoOptionCatalog.treatment(of: "bridge") == .unknown)
    }

    @Test("harmless defaults are accepted silently; log_dest file sets a file destination")
    func acceptedValues() throws {
        let settings = try BrokerConfigParser.parse(
            "listener 1883\nprotocol mqtt\nautosave_on_changes false\nlog_dest file /tmp/b.log")
        #expect(settings.warnings.isEmpty)
        #expect(settings.logDestination == .file(path: "/tmp/b.log"))
    }

    @Test("include_dir reads *.conf in mosquitto's order, only from the main file")
    func includeDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // a.conf after A.conf: the later max_qos wins, so the order is visible.
        try "max_qos 0\n".write(to: directory.appendingPathComponent("A.conf"), atomically: true, encoding: .utf8)
        try "max_qos 1\n".write(to: directory.appendingPathComponent("a.conf"), atomically: true, encoding: .utf8)
        try "listener 18999\n".write(to: directory.appendingPathComponent("0.conf"), atomically: true, encoding: .utf8)
        try "bogus\n".write(to: directory.appendingPathComponent("README"), atomically: true, encoding: .utf8)
        let settings = try BrokerConfigParser.parse("include_dir \(directory.path)")
        #expect(settings.configuration.listeners == [.init(host: "127.0.0.1", port: 18999)])
        #expect(settings.configuration.maxQoS == .atLeastOnce)

        try "include_dir /tmp\n".write(to: directory.appendingPathComponent("b.conf"), atomically: true, encoding: .utf8)
        #expect(throws: BrokerConfigError.self) { try BrokerConfigParser.parse("include_dir \(directory.path)") }
    }

    @Test("a missing or unreadable config file says so in a few words")
    func unreadableFile() {
        #expect(throws: BrokerConfigError.unreadable(path: "/nonexistent/m.conf", reason: "no such file")) {
            try BrokerConfigParser.load(path: "/nonexistent/m.conf")
        }
        #expect(throws: BrokerConfigError.unreadable(path: "/", reason: "is a directory")) {
            try BrokerConfigParser.load(path: "/")
        }
    }
}
