#if FUZZING
/// libFuzzer's entry point: runs the decoder oracle on one input. Built only with `-DFUZZING`
/// (see scripts/fuzz.sh); libFuzzer supplies `main`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPacketDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    DecoderOracle.check(bytes)
    return 0
}
#endif
