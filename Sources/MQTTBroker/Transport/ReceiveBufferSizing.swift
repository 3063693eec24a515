import NIOCore

/// How large a broker socket's next receive buffer is: NIO's adaptive policy (grow when a read fills the buffer,
/// halve after two reads that used at most half of it) with power-of-two sizes kept as 3 shift counts and a flag.
///
/// NIO stores a channel's receive allocator as an existential. `AdaptiveRecvByteBufferAllocator` (four words) does
/// not fit the existential's inline storage and costs every connection a heap box once it first records a read;
/// this one fits inline. It also grows four-fold per full read, so a connection that starts small (most idle
/// clients only ever send CONNECT and PINGREQ) reaches a large buffer in a few reads when it starts streaming.
struct ReceiveBufferSizing: RecvByteBufferAllocator {
    private var shift: UInt8
    private let minimumShift: UInt8
    private let maximumShift: UInt8
    private var decreaseNow = false

    /// Sizes between `minimum` and `maximum` bytes (rounded to powers of two), starting at `initial`.
    init(minimum: Int, initial: Int, maximum: Int) {
        precondition(minimum > 0 && minimum <= initial && initial <= maximum && maximum <= 1 << 30)
        func log2(_ value: Int) -> UInt8 { UInt8(Int.bitWidth - 1 - value.leadingZeroBitCount) }
        minimumShift = log2(minimum)
        shift = max(log2(initial), minimumShift)
        maximumShift = max(maximum > 1 ? log2(maximum - 1) + 1 : 0, shift)
    }

    /// The size of the buffer the next read gets.
    var currentSize: Int { 1 << Int(shift) }

    func buffer(allocator: ByteBufferAllocator) -> ByteBuffer {
        allocator.buffer(capacity: currentSize)
    }

    func nextBufferSize() -> Int? {
        currentSize
    }

    mutating func record(actualReadBytes: Int) -> Bool {
        if actualReadBytes >= currentSize, shift < maximumShift {
            shift = min(shift + 2, maximumShift)
            decreaseNow = false
            return true
        }
        if actualReadBytes <= currentSize / 2, shift > minimumShift {
            if decreaseNow {
                shift -= 1
                decreaseNow = false
            } else {
                decreaseNow = true
            }
            return false
        }
        decreaseNow = false
        return false
    }
}
