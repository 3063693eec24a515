import NIOCore
import Testing

@testable import MQTTCore

@Suite("Variable byte integers and fixed headers")
struct VariableByteIntegerTests {
    @Test(
        "a fixed header round-trips through the writer and both readers on each side of every length-byte boundary",
        arguments: [0, 2, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_455]
    )
    func roundTrip(remainingLength: Int) throws {
        var buffer = ByteBuffer(bytes: [0xEE])  // a byte before the header: readers take an index
        buffer.moveReaderIndex(forwardBy: 1)
        buffer.writeMQTTFixedHeader(firstByte: 0x62, remainingLength: remainingLength)
        let expectedByteCount = MQTTWireSize.variableByteInteger(remainingLength)
        #expect(buffer.readableBytes == 1 + expectedByteCount)
        #expect(buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == 0x62)
        let fromBuffer = try #require(try buffer.getMQTTVariableByteInteger(at: buffer.readerIndex + 1))
        #expect(fromBuffer.value == remainingLength && fromBuffer.byteCount == expectedByteCount)
        let fromBytes = try buffer.withUnsafeReadableBytes { (bytes) throws(MQTTCodecError) in try bytes.mqttVariableByteInteger(at: 1) }
        #expect(fromBytes?.value == remainingLength && fromBytes?.byteCount == expectedByteCount)
        // Every prefix that stops inside the integer is "need more bytes".
        for cut in 1..<expectedByteCount {
            let prefix = try #require(buffer.getSlice(at: buffer.readerIndex, length: 1 + cut))
            #expect(try prefix.getMQTTVariableByteInteger(at: prefix.readerIndex + 1) == nil)
        }
        // An index before the readable bytes is not read.
        #expect(try buffer.getMQTTVariableByteInteger(at: buffer.readerIndex - 1) == nil)
    }

    @Test("a fourth length byte with its continuation bit set is an error, from either reader")
    func tooLong() {
        let buffer = ByteBuffer(bytes: [0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(throws: MQTTCodecError.remainingLengthTooLong) { try buffer.getMQTTVariableByteInteger(at: 1) }
        #expect(throws: MQTTCodecError.remainingLengthTooLong) {
            try buffer.withUnsafeReadableBytes { (bytes) throws(MQTTCodecError) in try bytes.mqttVariableByteInteger(at: 1) }
        }
    }
}
