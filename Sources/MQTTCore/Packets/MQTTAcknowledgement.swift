/// A PUBACK, PUBREC, PUBREL or PUBCOMP as MQTT 3.1.1 has them: a type and a packet identifier, four bytes on the
/// wire. A broker writes one of these for nearly every packet it receives; this value lets it do so without
/// building an ``MQTTPacket`` (whose acknowledgement structs carry an MQTT 5 property list) and encoding it through
/// the general encoder's switch: ``MQTTPacketEncoder`` writes it directly. The same four bytes are an MQTT 5
/// acknowledgement of success without properties (MQTT 5.0 3.4.2.1), so it serves both versions.
public struct MQTTAcknowledgement: Sendable, Hashable {
    /// Which of the four identifier-only packets.
    public enum Kind: Sendable, Hashable {
        /// PUBACK: a QoS 1 PUBLISH was received.
        case puback
        /// PUBREC: a QoS 2 PUBLISH was received (first step of its handshake).
        case pubrec
        /// PUBREL: the publisher releases a QoS 2 message after PUBREC.
        case pubrel
        /// PUBCOMP: the receiver completes a QoS 2 exchange after PUBREL.
        case pubcomp

        /// The packet type written in the fixed header.
        public var packetType: PacketType {
            switch self {
            case .puback: .puback
            case .pubrec: .pubrec
            case .pubrel: .pubrel
            case .pubcomp: .pubcomp
            }
        }
    }

    /// Which packet this is.
    public var kind: Kind
    /// The identifier of the message it acknowledges; never 0 on the wire (MQTT-2.3.1-1).
    public var packetID: UInt16
    /// The MQTT 5 reason code; ``MQTTReasonCode/success`` (the four-byte form) unless an MQTT 5 peer must hear
    /// otherwise (0x10 No matching subscribers, 0x87 Not authorized, 0x92 Packet Identifier not found …). MQTT 3.1.1
    /// has no reason codes: only MQTT 5 connections may be given another one.
    public var reasonCode: MQTTReasonCode

    /// Creates an acknowledgement of `kind` for `packetID`.
    public init(_ kind: Kind, packetID: UInt16, reasonCode: MQTTReasonCode = .success) {
        self.kind = kind
        self.packetID = packetID
        self.reasonCode = reasonCode
    }
}
