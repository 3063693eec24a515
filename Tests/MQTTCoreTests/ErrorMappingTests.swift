import MQTTCore
import Testing

@Suite("Mapping codec errors to what goes on the wire")
struct ErrorMappingTests {
    @Test("CONNECT errors with a 3.1.1 CONNACK answer")
    func connectReturnCodes() {
        #expect(MQTTCodecError.unsupportedProtocolLevel(5).connectReturnCode == .unacceptableProtocolVersion)
        #expect(MQTTCodecError.emptyClientIdentifierWithoutCleanSession.connectReturnCode == .identifierRejected)
        #expect(MQTTCodecError.emptyClientIdentifierInMQTT31.connectReturnCode == .identifierRejected)
    }

    @Test("every other error closes without a CONNACK", arguments: malformedCases)
    func noConnectReturnCode(_ testCase: MalformedCase) {
        switch testCase.error {
        case .unsupportedProtocolLevel, .emptyClientIdentifierWithoutCleanSession, .emptyClientIdentifierInMQTT31:
            #expect(testCase.error.connectReturnCode != nil)
        default:
            #expect(testCase.error.connectReturnCode == nil)
        }
    }

    static let reasonCodes: [(MQTTCodecError, UInt8)] = [
        (.invalidUTF8, 0x81), (.reservedPacketType(0), 0x81), (.trailingBytes(count: 1), 0x81),
        (.invalidFixedHeaderFlags(packetType: .pubrel, flags: 0), 0x81), (.remainingLengthTooLong, 0x81),
        (.subscriptionOptionsReservedBitsSet(4), 0x81), (.connectReservedFlagSet, 0x81),
        (.zeroPacketIdentifier, 0x82), (.subscribeWithoutFilters, 0x82), (.invalidSubscriptionQoS(3), 0x82),
        (.duplicateFlagOnQoS0, 0x82),
        (.unsupportedProtocolLevel(5), 0x84), (.invalidProtocolName("x"), 0x84),
        (.emptyClientIdentifierWithoutCleanSession, 0x85),
        (.wildcardNotWholeLevel, 0x8F), (.multiLevelWildcardNotLast, 0x8F), (.emptyTopicFilter, 0x8F),
        (.wildcardInTopicName, 0x90), (.emptyTopicName, 0x90),
        (.packetTooLarge(size: 2, maximum: 1), 0x95),
    ]

    @Test("MQTT 5 reason codes", arguments: reasonCodes.indices)
    func reasonCode(_ index: Int) {
        let (error, code) = Self.reasonCodes[index]
        #expect(error.reasonCode == code, "\(error)")
    }

    @Test("every reason code is an error code (0x80 or above)", arguments: malformedCases)
    func reasonCodesAreErrors(_ testCase: MalformedCase) {
        #expect(testCase.error.reasonCode >= 0x80)
    }
}
