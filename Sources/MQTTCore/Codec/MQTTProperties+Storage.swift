public import NIOCore

// Public wrappers of the internal property codec, for code outside MQTTCore that stores property lists in its own
// files (the broker's persistence): the same bytes as on the wire, a variable byte integer length then the
// properties, checked against a context exactly as a packet's properties are.
extension MQTTProperties {
    /// Appends the property length and the properties to `buffer`, after checking the list as the decoder would for
    /// `context` (allowed identifiers, repeats, values, field lengths). Writes nothing when the check fails.
    public func encode(into buffer: inout ByteBuffer, context: MQTTPropertyContext) throws(MQTTCodecError) {
        _ = try encodedLength(in: context)
        encode(into: &buffer)
    }

    /// Reads a property length and the properties it covers from `buffer`, checked against `context` as a packet's
    /// properties are; the reader index moves past the block.
    public init(decodingBlockFrom buffer: inout ByteBuffer, context: MQTTPropertyContext) throws(MQTTCodecError) {
        self = try Self.decode(from: &buffer, context: context)
    }
}
