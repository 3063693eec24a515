import Logging
import MQTTCore
import NIOCore

/// What the rest of the broker writes to a connection, carrying out ``ConnectionOutput``: packets encoded straight
/// into the coalescing buffer, large payloads handed over as their own shared buffers, each write counted for
/// `$SYS` and the pending-output bound, and the connection marked for the next flush (``OutputFlusher``).
extension BrokerConnectionHandler {
    /// Runs `body` on the coalescing buffer (``ConnectionOutput``) and hands a full one over to the transport.
    @inline(__always)
    private func withOutput(_ body: (inout ByteBuffer) -> Void) {
        if output.append(pool: &core.outputBuffers, allocator: core.allocator, body) {
            output.handOver(to: transport)
        }
    }

    /// Encodes and writes a packet without flushing.
    func write(_ packet: MQTTPacket) {
        guard transport != nil else { return }
        let protocolVersion = self.protocolVersion
        let written = encodeIntoOutput(describing: "\(packet.type)") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(packet, protocolVersion: protocolVersion, into: &buffer)
        }
        guard written > 0 else { return }
        switch packet {
        case .puback, .pubrec, .pubcomp: break
        default: output.holdsOnlyAcknowledgements = false
        }
        noteWritten(written)
    }

    /// Writes an MQTT 5 AUTH packet (enhanced authentication) without flushing.
    func write(_ auth: AuthPacket) {
        guard transport != nil else { return }
        let written = encodeIntoOutput(describing: "AUTH") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(auth, into: &buffer)
        }
        guard written > 0 else { return }
        output.holdsOnlyAcknowledgements = false
        noteWritten(written)
    }

    /// Writes a PUBACK, PUBREC, PUBREL or PUBCOMP without flushing: its four bytes straight into the coalescing
    /// buffer, with no packet value to build, switch over and destroy (a QoS 2 message takes three).
    func writeAcknowledgement(_ acknowledgement: MQTTAcknowledgement) {
        guard transport != nil else { return }
        let written = encodeIntoOutput(describing: "\(acknowledgement.kind)") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(acknowledgement, into: &buffer)
        }
        guard written > 0 else { return }
        if acknowledgement.kind == .pubrel { output.holdsOnlyAcknowledgements = false }  // a PUBREL answers a delivery
        noteWritten(written)
    }

    /// Runs `encode` on the coalescing buffer and returns the bytes it wrote; 0 when the encoder refused the packet,
    /// which is logged and leaves the buffer as it was. Always inlined: it runs for every packet written, and as a call
    /// it would cost a call's overhead on each.
    @inline(__always)
    private func encodeIntoOutput(
        describing packet: @autoclosure () -> String, _ encode: (inout ByteBuffer) throws(MQTTCodecError) -> Void
    ) -> Int {
        var written = 0
        withOutput { buffer in
            let start = buffer.writerIndex
            do {
                try encode(&buffer)
            } catch {
                buffer.moveWriterIndex(to: start)
                logger.error("could not encode outgoing packet", metadata: ["packet": "\(packet())", "error": "\(error)"])
                return
            }
            written = buffer.writerIndex - start
        }
        return written
    }

    /// Counts a packet of `bytes` written into the coalescing buffer and marks the connection for the next flush.
    private func noteWritten(_ bytes: Int) {
        core.statistics.messagesSent += 1
        core.statistics.bytesSent += UInt64(bytes)
        noteHanded(bytes)
        core.flusher.markDirty(self)
    }

    /// Writes one outbound PUBLISH without flushing: encoded straight into the coalescing buffer, with a large
    /// payload written behind it as its own (shared, not copied) buffer.
    func writePublish(_ delivery: OutboundDelivery) {
        guard let transport else { return }
        let version5 = protocolVersion == .v5
        if version5, !takesFastVersion5Path(delivery) {
            writePublishVersion5(delivery)
            return
        }
        let payload = delivery.message.payload
        let inline = payload.readableBytes <= PublishEncoding.inlinePayloadLimit
        var headerBytes = 0
        withOutput { buffer in
            let start = buffer.writerIndex
            PublishEncoding.write(delivery, includingPayload: inline, version5: version5, into: &buffer)
            headerBytes = buffer.writerIndex - start
        }
        if !inline {
            output.handOver(to: transport)
            transport.write(payload)
        }
        notePublishWritten(bytes: headerBytes + (inline ? 0 : payload.readableBytes))
    }

    /// Writes an already encoded PUBLISH (shared between subscribers for QoS 0) without flushing. A small one is
    /// copied into the coalescing buffer; a large one goes out as its shared buffers.
    func writeEncodedPublish(_ encoded: PublishEncoding.Encoded) {
        guard let transport else { return }
        if let payload = encoded.payload {
            output.handOver(to: transport)
            transport.write(encoded.head)
            transport.write(payload)
        } else {
            withOutput { $0.writeImmutableBuffer(encoded.head) }
        }
        notePublishWritten(bytes: encoded.byteCount)
    }

    /// Whether an MQTT 5 `delivery` to this connection is written as the 3.1.1 layout plus an empty property list
    /// (``PublishEncoding/isPropertyFree(_:)``, and no topic aliases set towards this client).
    func takesFastVersion5Path(_ delivery: OutboundDelivery) -> Bool {
        outboundTopicAliasMaximum == 0 && PublishEncoding.isPropertyFree(delivery)
    }

    /// Writes an MQTT 5 PUBLISH without flushing: its properties (which differ per message, and per subscriber in
    /// their Subscription Identifiers), with the seconds its Message Expiry Interval has left (MQTT-3.3.2-6).
    private func writePublishVersion5(_ delivery: OutboundDelivery) {
        var properties = delivery.message.properties
        if let secondsLeft = delivery.message.secondsLeft(at: core.now) {
            properties.entries.append(.messageExpiryInterval(max(secondsLeft, 1)))
        }
        var topic = delivery.message.topic
        if let (alias, known) = outboundTopicAliases.alias(for: topic) {
            properties.entries.append(.topicAlias(alias))
            if known { topic = "" }
        }
        let packet = PublishPacket(
            topic: topic, payload: delivery.message.payload, qos: delivery.qos, retain: delivery.retain,
            dup: delivery.dup, packetID: delivery.packetID, properties: properties)
        let written = encodeIntoOutput(describing: "PUBLISH") { (buffer) throws(MQTTCodecError) in
            try MQTTPacketEncoder.encode(.publish(packet), protocolVersion: .v5, into: &buffer)
        }
        guard written > 0 else { return }
        notePublishWritten(bytes: written)
    }

    private func notePublishWritten(bytes: Int) {
        output.holdsOnlyAcknowledgements = false
        core.statistics.messagesSent += 1
        core.statistics.publishSent += 1
        core.statistics.bytesSent += UInt64(bytes)
        noteHanded(bytes, delivery: true)
        core.flusher.markDirty(self)
    }

    /// Writes what an outbound-flow event decided, without flushing.
    func write(_ actions: [OutboundAction]) {
        for action in actions {
            switch action {
            case .publish(let delivery):
                writePublish(delivery)
            case .pubrel(let packetID):
                writeAcknowledgement(MQTTAcknowledgement(.pubrel, packetID: packetID))
            }
        }
    }

    /// Flushes pending writes (called by the core once per batch, `now` being the batch's time).
    func flushNow(at now: NIODeadline) {
        parking.lastFlushedAt = now
        output.handOver(to: transport)
        flushTransport()
    }
}
