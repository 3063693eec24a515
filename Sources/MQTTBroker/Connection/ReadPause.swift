/// Reading paused on behalf of the core (publisher back-pressure, ``PublisherBackpressure``): which of the client's
/// bytes wait, and when the socket itself must stop or may resume reading. A value type; the connection carries
/// out what it returns.
///
/// A paused publisher's next read batches are decoded up to their first PUBLISH, which waits with everything
/// behind it: its other packets (PUBREL, PINGREQ, acknowledgements) are still answered, so its own window keeps
/// moving and the batch it sends when resumed is a full one. The batch in progress when it was paused goes on,
/// unless the core halts it too. The socket is still read until ``inputLimit`` bytes wait, so a pause and a resume
/// a few batches later cost no system call; past the limit the socket stops being read and TCP pushes back.
struct ReadPause {
    /// Bytes a paused connection still reads from its socket before it stops reading: enough for a client's
    /// window of small messages, and little memory.
    static let inputLimit = 16 * 1024

    /// Whether the core paused the connection: no PUBLISH of a new read batch is decoded.
    private(set) var isPaused = false
    /// Whether the pause applies to the read batch in progress as well (the congested session is near its limit).
    private(set) var isDecodingHalted = false
    /// Whether the socket is not read.
    private(set) var isSocketPaused = false

    /// Pauses the connection; returns true when its socket must stop reading now (`pendingInput` bytes wait).
    mutating func pause(pendingInput: Int) -> Bool {
        guard !isPaused else { return false }
        isPaused = true
        return inputArrived(pendingInput: pendingInput)
    }

    /// Applies the pause to the read batch in progress too, from its next PUBLISH on.
    mutating func haltDecoding() {
        isDecodingHalted = true
    }

    /// Input arrived; returns true when the socket of a paused connection must stop reading now.
    mutating func inputArrived(pendingInput: Int) -> Bool {
        guard isPaused, !isSocketPaused, pendingInput >= Self.inputLimit else { return false }
        isSocketPaused = true
        return true
    }

    /// Ends the pause; returns true when it was paused (what waits is to be decoded).
    mutating func resume() -> Bool {
        guard isPaused else { return false }
        isPaused = false
        isDecodingHalted = false
        return true
    }

    /// What waited was decoded; returns true when the socket may read again (nothing paused it meanwhile).
    mutating func socketMayResume() -> Bool {
        guard !isPaused, isSocketPaused else { return false }
        isSocketPaused = false
        return true
    }

    /// Whether a PUBLISH at this point of a read batch waits: the batch began paused, or the core halted it.
    func publishWaits(batchBeganPaused: Bool) -> Bool {
        batchBeganPaused || isDecodingHalted
    }
}
