public import NIOCore

/// Turns inbound bytes into ``MQTTPacket`` values in a NIO pipeline; wrap it in `ByteToMessageHandler`.
///
/// Malformed input makes `ByteToMessageHandler` fire the ``MQTTCodecError`` through `errorCaught` and stop
/// decoding; the next handler decides whether to answer (see ``MQTTCodecError/connectReturnCode``) and close.
public final class MQTTPacketDecoderHandler: ByteToMessageDecoder {
    /// Each decoded packet is passed on as an ``MQTTPacket``.
    public typealias InboundOut = MQTTPacket

    /// The wrapped decoder.
    public var decoder: MQTTPacketDecoder

    /// The version used for non-CONNECT packets; set it once CONNECT has been accepted.
    public var protocolVersion: MQTTProtocolVersion {
        get { decoder.protocolVersion }
        set { decoder.protocolVersion = newValue }
    }

    /// Creates a handler that rejects packets whose remaining length exceeds `maximumPacketSize`, and decodes
    /// MQTT 5 only if `acceptsVersion5` (see ``MQTTPacketDecoder/acceptsVersion5``).
    public init(maximumPacketSize: Int = MQTTPacketDecoder.protocolMaximumPacketSize, acceptsVersion5: Bool = false) {
        self.decoder = MQTTPacketDecoder(maximumPacketSize: maximumPacketSize, acceptsVersion5: acceptsVersion5)
    }

    /// Decodes one packet if the buffer holds a whole one.
    public func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let packet = try decoder.decode(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(packet))
        return .continue
    }

    /// Decodes what is left when the channel closes; a partial packet is left for `ByteToMessageHandler` to report.
    public func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        try decode(context: context, buffer: &buffer)
    }
}

/// Turns outbound ``MQTTPacket`` values into bytes in a NIO pipeline; wrap it in `MessageToByteHandler`.
public final class MQTTPacketEncoderHandler: MessageToByteEncoder {
    /// The handler accepts ``MQTTPacket`` writes.
    public typealias OutboundIn = MQTTPacket

    /// The version negotiated on the connection (CONNECT packets use their own).
    public var protocolVersion: MQTTProtocolVersion

    /// Creates an encoder handler.
    public init(protocolVersion: MQTTProtocolVersion = .v3_1_1) {
        self.protocolVersion = protocolVersion
    }

    /// Encodes `data` into `out`; an unencodable packet fails the write with its ``MQTTCodecError``.
    public func encode(data: MQTTPacket, out: inout ByteBuffer) throws {
        try MQTTPacketEncoder.encode(data, protocolVersion: protocolVersion, into: &out)
    }
}
