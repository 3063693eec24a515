/// SUBACK: the server's answer to SUBSCRIBE (MQTT 3.1.1 section 3.9, MQTT 5.0 section 3.9).
public struct SubAckPacket: Sendable, Hashable {
    /// The identifier of the SUBSCRIBE this answers.
    public var packetID: UInt16
    /// One reason code per requested filter, in the same order: Granted QoS 0 to 2, or a failure (0x80 and above).
    /// 3.1.1 has only 0x80 for failure; its encoder writes every failure as 0x80.
    public var reasonCodes: [MQTTReasonCode]
    /// MQTT 5 properties; empty for 3.1.1.
    public var properties: MQTTProperties

    /// The 3.1.1 view of ``reasonCodes``: the granted QoS, or failure for any failure code.
    public var returnCodes: [SubAckReturnCode] {
        get { reasonCodes.map(SubAckReturnCode.init) }
        set { reasonCodes = newValue.map(MQTTReasonCode.init) }
    }

    /// Creates a SUBACK packet from 3.1.1 return codes.
    public init(packetID: UInt16, returnCodes: [SubAckReturnCode], properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.reasonCodes = returnCodes.map(MQTTReasonCode.init)
        self.properties = properties
    }

    /// Creates a SUBACK packet from MQTT 5 reason codes.
    public init(packetID: UInt16, reasonCodes: [MQTTReasonCode], properties: MQTTProperties = .none) {
        self.packetID = packetID
        self.reasonCodes = reasonCodes
        self.properties = properties
    }
}

/// One SUBACK return code: the granted QoS, or failure (0x80).
public enum SubAckReturnCode: Sendable, Hashable {
    /// The subscription was accepted with this maximum QoS.
    case granted(QoS)
    /// 0x80: the subscription was refused.
    case failure

    /// The byte on the wire.
    public var rawValue: UInt8 {
        switch self {
        case .granted(let qos): return qos.rawValue
        case .failure: return 0x80
        }
    }

    /// Parses a wire byte; nil for values MQTT 3.1.1 does not allow.
    public init?(rawValue: UInt8) {
        if rawValue == 0x80 {
            self = .failure
        } else if let qos = QoS(rawValue: rawValue) {
            self = .granted(qos)
        } else {
            return nil
        }
    }
}
