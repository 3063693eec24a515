import CMosquitto
import Foundation
import MQTTCore

/// libmosquitto's callbacks. They run on the network thread and only copy their data (the property lists and the
/// message are freed when they return), hand it to the state machine or the streams, and return.
///
/// The MQTT 5 variants are installed for every protocol version: libmosquitto calls them at 3.1.1 too, with
/// reason code 0 and no properties.
extension ClientEngine {
    func installCallbacks() {
        let pointer = handle.pointer
        mosquitto_user_data_set(pointer, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_v5_callback_set(pointer) { _, context, code, flags, properties in
            guard let engine = ClientEngine.from(context) else { return }
            let version = engine.configuration.protocolVersion
            let sessionPresent = flags & 1 == 1
            let info = PropertyReader.connAck(properties, sessionPresent: sessionPresent)
            engine.feed(deferringResumes: true) {
                $0.connackReceived(code: code, sessionPresent: sessionPresent, protocolVersion: version, connAck: info)
            }
        }
        mosquitto_disconnect_v5_callback_set(pointer) { _, context, code, properties in
            guard let engine = ClientEngine.from(context) else { return }
            let error = engine.disconnectError(code: code, properties: properties)
            engine.feed(deferringResumes: true) { $0.connectionClosed(cleanly: code == 0, error: error) }
        }
        mosquitto_publish_v5_callback_set(pointer) { _, context, mid, reasonCode, properties in
            guard let engine = ClientEngine.from(context) else { return }
            let reasonString = reasonCode >= 0x80 ? PropertyReader.reasonString(properties) : nil
            engine.feed(deferringResumes: true) {
                $0.publishAcknowledged(mid: mid, reasonCode: reasonCode, reasonString: reasonString)
            }
        }
        mosquitto_subscribe_v5_callback_set(pointer) { _, context, mid, count, grantedPointer, _ in
            guard let engine = ClientEngine.from(context) else { return }
            let granted = grantedPointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(count, 0)))) } ?? []
            engine.feed(deferringResumes: true) { $0.subackReceived(mid: mid, granted: granted) }
        }
        // libmosquitto 2.0 does not pass UNSUBACK reason codes to any callback (only the properties).
        mosquitto_unsubscribe_v5_callback_set(pointer) { _, context, mid, _ in
            ClientEngine.from(context)?.feed(deferringResumes: true) { $0.unsubackReceived(mid: mid) }
        }
        mosquitto_message_v5_callback_set(pointer) { _, context, messagePointer, properties in
            guard let engine = ClientEngine.from(context), let raw = messagePointer?.pointee,
                let topicPointer = raw.topic
            else { return }
            let payload: [UInt8] =
                raw.payload.map {
                    Array(UnsafeRawBufferPointer(start: $0, count: Int(max(raw.payloadlen, 0))))
                } ?? []
            let (publishProperties, identifiers) = PropertyReader.message(properties)
            let message = MQTTMessage(
                topic: String(cString: topicPointer), payload: payload,
                qos: QoS(rawValue: UInt8(clamping: raw.qos)) ?? .atMostOnce, retain: raw.retain,
                messageID: UInt16(clamping: raw.mid), properties: publishProperties,
                subscriptionIdentifiers: identifiers)
            engine.deliver(message)
        }
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> ClientEngine? {
        guard let context else { return nil }
        return Unmanaged<ClientEngine>.fromOpaque(context).takeUnretainedValue()
    }

    /// Why the connection closed: at MQTT 5 a `code` ≥ 0x80 is the reason code of a DISCONNECT the broker sent
    /// (libmosquitto's own error codes are all below 0x80); otherwise a libmosquitto error.
    private func disconnectError(code: Int32, properties: OpaquePointer?) -> MQTTClientError {
        guard isV5, (0x80...0xFF).contains(code) else { return MosquittoError.lossError(code) }
        return .reasonCode(
            MQTTReasonCode(rawValue: UInt8(code)), reasonString: PropertyReader.reasonString(properties))
    }

    /// Hands a response to the request waiting for it; broadcasts everything else to every live stream whose filter
    /// matches.
    func deliver(_ message: MQTTMessage) {
        if let correlation = message.properties.correlationData, message.topic == replyTopic {
            let waiter = requests.withLock { $0.resolve(correlation, with: .success(message)) }
            switch waiter {
            case .resume(let waiter): return waiter.resume(returning: .success(message))
            case .stored: return
            case .unknown: break  // a late or foreign response: an ordinary message
            }
        }
        let targets = listeners.withLock { listeners in
            listeners.streams.values.compactMap { entry in
                entry.filter.map { MQTTTopic.matches(filter: $0, topic: message.topic) } ?? true
                    ? entry.continuation : nil
            }
        }
        guard !targets.isEmpty else { return }
        // Yielded in the network thread's next batch, after any completion deferred before it (see DeferredWakeUps).
        core.withLock { core in
            for continuation in targets { core.deferred.append(.deliver(continuation, message), now: .now) }
        }
    }
}
