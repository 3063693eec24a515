import CMosquitto

/// `mosquitto_lib_init` runs once, the first time a handle is created (Swift initialises globals lazily and
/// thread-safely).
private let mosquittoLibraryInitialised: Bool = {
    mosquitto_lib_init()
    return true
}()

/// Owns one `struct mosquitto *`.
///
/// `@unchecked Sendable`: `OpaquePointer` is not Sendable, but the handle is put in threaded mode
/// (`mosquitto_threaded_set`), where libmosquitto guards its state with its own mutexes. Only the calls documented as
/// thread-safe in that mode (`mosquitto_publish`, `mosquitto_subscribe`, `mosquitto_unsubscribe`) are made from
/// caller threads; configuration happens in `init` before the network thread starts, and connect, disconnect,
/// the socket I/O (``SocketPoller``) and `mosquitto_destroy` run only on the network thread.
final class MosquittoHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(clientID: String, cleanSession: Bool) throws(MQTTClientError) {
        _ = mosquittoLibraryInitialised
        // An empty identifier (MQTT 5 only, checked by the engine) is NULL: libmosquitto then sends a zero-length one.
        guard let pointer = mosquitto_new(clientID.isEmpty ? nil : clientID, cleanSession, nil) else {
            throw .invalidConfiguration("mosquitto_new failed for client identifier \"\(clientID)\"")
        }
        self.pointer = pointer
        mosquitto_threaded_set(pointer, true)
    }

    /// Frees the handle; call once, from the network thread, after its last turn of socket I/O.
    func destroy() {
        mosquitto_destroy(pointer)
    }

    /// Applies every setting of `configuration` that libmosquitto stores before connecting.
    func apply(_ configuration: MQTTClientConfiguration) throws(MQTTClientError) {
        let version: Int32
        switch configuration.protocolVersion {
        case .v3_1: version = Int32(MQTT_PROTOCOL_V31)
        case .v3_1_1: version = Int32(MQTT_PROTOCOL_V311)
        case .v5: version = Int32(MQTT_PROTOCOL_V5)
        }
        try check(mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        if configuration.tcpNoDelay {
            try check(mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        }
        try check(
            mosquitto_max_inflight_messages_set(pointer, UInt32(clamping: configuration.maxInflightMessages)),
            "maxInflightMessages")
        // Sent in CONNECT at MQTT 5 only; before it, libmosquitto still holds incoming QoS 2 messages to this quota.
        try check(
            mosquitto_int_option(pointer, MOSQ_OPT_RECEIVE_MAXIMUM, Int32(configuration.receiveMaximum)),
            "receiveMaximum")
        if let username = configuration.username {
            try check(mosquitto_username_pw_set(pointer, username, configuration.password), "username/password")
        }
        if let will = configuration.will {
            guard mosquitto_pub_topic_check2(will.topic, will.topic.utf8.count) == MosquittoError.success else {
                throw .invalidTopic(will.topic)
            }
            try setWill(will, v5: configuration.protocolVersion == .v5)
        }
        if let tls = configuration.tls {
            try check(mosquitto_tls_set(pointer, tls.caFile, tls.caPath, tls.certFile, tls.keyFile, nil), "TLS files")
            try check(mosquitto_tls_opts_set(pointer, 1, tls.tlsVersion, nil), "TLS options")
            try check(mosquitto_tls_insecure_set(pointer, !tls.verifyHostname), "TLS hostname verification")
        }
    }

    private func setWill(_ will: MQTTWill, v5: Bool) throws(MQTTClientError) {
        guard v5 || (will.properties.isEmpty && will.delayInterval == nil) else {
            throw .mqtt5Required("will properties")
        }
        var properties = try PropertyList(publish: will.properties)
        if let delay = will.delayInterval { try properties.add(MQTT_PROP_WILL_DELAY_INTERVAL, int32: delay) }
        let list = properties.release()
        let rc = will.payload.withUnsafeBytes { bytes in
            mosquitto_will_set_v5(
                pointer, will.topic, Int32(clamping: bytes.count), bytes.baseAddress, Int32(will.qos.rawValue),
                will.retain, list)
        }
        // On success libmosquitto owns the list; on failure it is still ours.
        if rc != MosquittoError.success {
            var owned = list
            mosquitto_property_free_all(&owned)
        }
        try check(rc, "will")
    }

    private func check(_ rc: Int32, _ what: String) throws(MQTTClientError) {
        guard rc == MosquittoError.success else {
            throw .invalidConfiguration("\(what): \(MosquittoError.message(rc))")
        }
    }
}
